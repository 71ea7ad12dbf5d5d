// Package kubernetes holds the locksim Jobs' manifests and their test: no
// cluster is reachable here, so each manifest is decoded strictly against
// the Kubernetes API's own Go types (k8s.io/api), as the API server's
// strict field validation would (an unknown or duplicate field, or a
// value of the wrong type, is an error), and the Jobs are checked to agree
// with each other and with sim's --shard auto.
package kubernetes

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// image is the locksim image every pod runs (docker/build-images).
const image = "locksim/sim:bookworm"

// decoder decodes YAML into the types of core/v1 and batch/v1, strictly.
func decoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
}

// objects decodes every document of every manifest in this folder.
func objects(t *testing.T) map[string][]runtime.Object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifest: %v", err)
	}
	dec := decoder(t)
	out := map[string][]runtime.Object{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
				continue
			}
			obj, gvk, err := dec.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Errorf("%s, document %d: %v", f, i+1, err)
				continue
			}
			t.Logf("%s, document %d: %s", f, i+1, gvk)
			out[f] = append(out[f], obj)
		}
	}
	return out
}

// TestStrictDecodingRefusesMistakes: the decoder the manifests pass is
// strict, so passing it means something: a misspelt field, a field given
// twice and a string where the API has an integer are each refused.
func TestStrictDecodingRefusesMistakes(t *testing.T) {
	dec := decoder(t)
	good := "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  completionMode: Indexed\n  completions: 2\n" +
		"  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: sim, image: " + image + "}]\n"
	if _, _, err := dec.Decode([]byte(good), nil, nil); err != nil {
		t.Fatalf("a valid Job: %v", err)
	}
	for name, bad := range map[string]string{
		"unknown field":  strings.Replace(good, "completionMode", "completionMod", 1),
		"duplicate":      strings.Replace(good, "  completions: 2\n", "  completions: 2\n  completions: 3\n", 1),
		"wrong type":     strings.Replace(good, "completions: 2", `completions: "two"`, 1),
		"unknown kind":   strings.Replace(good, "kind: Job", "kind: IndexedJob", 1),
		"misplaced args": strings.Replace(good, "image: "+image, "image: "+image+", argz: [run]", 1),
	} {
		if _, _, err := dec.Decode([]byte(bad), nil, nil); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

// TestManifests: every manifest decodes strictly; each Indexed Job runs
// sim --shard auto in the locksim image with LOCKSIM_SHARDS equal to its
// completions, writes shard-$(JOB_COMPLETION_INDEX) on the runs volume;
// its merge Job names each of those shards once.
func TestManifests(t *testing.T) {
	objs := objects(t)
	var claims []string
	jobs := map[string]*batchv1.Job{}
	for f, list := range objs {
		for _, o := range list {
			switch o := o.(type) {
			case *corev1.PersistentVolumeClaim:
				claims = append(claims, o.Name)
			case *batchv1.Job:
				jobs[f] = o
			case *corev1.Pod:
				checkPod(t, f, &o.Spec, nil)
			default:
				t.Errorf("%s: unexpected %T", f, o)
			}
		}
	}
	for _, kind := range []string{"sweep", "hunt", "findings"} {
		job, merge := jobs[kind+".yaml"], jobs[kind+"-merge.yaml"]
		if job == nil || merge == nil {
			t.Fatalf("want %s.yaml and %s-merge.yaml, each a Job", kind, kind)
		}
		s := job.Spec
		if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || s.Parallelism == nil {
			t.Fatalf("%s.yaml: want completionMode Indexed with completions and parallelism", kind)
		}
		n := int(*s.Completions)
		if int(*s.Parallelism) != n {
			t.Errorf("%s.yaml: parallelism %d, completions %d: each shard in its own pod at once", kind, *s.Parallelism, n)
		}
		c := checkPod(t, kind+".yaml", &s.Template.Spec, claims)
		line := strings.Join(append(slices.Clone(c.Command), c.Args...), " ")
		if !strings.Contains(line, "sim "+kind+" ") && !strings.HasPrefix(line, kind+" ") {
			t.Errorf("%s.yaml: runs %q, want sim %s", kind, line, kind)
		}
		if !regexp.MustCompile(`--shard auto\b`).MatchString(line) {
			t.Errorf("%s.yaml: runs %q, want --shard auto", kind, line)
		}
		dir := "/runs/" + kind + "/shard-"
		if !strings.Contains(line, dir+"$(JOB_COMPLETION_INDEX)") && !strings.Contains(line, dir+"$JOB_COMPLETION_INDEX") {
			t.Errorf("%s.yaml: runs %q, want --out %s$(JOB_COMPLETION_INDEX)", kind, line, dir)
		}
		if got := envValue(c, "LOCKSIM_SHARDS"); got != strconv.Itoa(n) {
			t.Errorf("%s.yaml: LOCKSIM_SHARDS %q, completions %d: they must agree", kind, got, n)
		}
		if kind != "hunt" && !strings.Contains(line, "--seed") {
			t.Errorf("%s.yaml: runs %q: its shards need one --seed", kind, line)
		}
		m := checkPod(t, kind+"-merge.yaml", &merge.Spec.Template.Spec, claims)
		mline := strings.Join(append(slices.Clone(m.Command), m.Args...), " ")
		if !strings.Contains(mline, kind+" merge ") {
			t.Errorf("%s-merge.yaml: runs %q, want sim %s merge", kind, mline, kind)
		}
		for i := 0; i < n+1; i++ {
			has := len(regexp.MustCompile(regexp.QuoteMeta(dir+strconv.Itoa(i))+`\b`).FindAllString(mline, -1))
			if want := map[bool]int{true: 1, false: 0}[i < n]; has != want {
				t.Errorf("%s-merge.yaml: names %s%d %d times, want %d (completions %d)", kind, dir, i, has, want, n)
			}
		}
	}
}

// checkPod checks what every locksim pod needs: restartPolicy Never
// (a Job's), the locksim image, and /runs from a claim of claims (nil:
// any claim).
func checkPod(t *testing.T, f string, p *corev1.PodSpec, claims []string) corev1.Container {
	t.Helper()
	if len(p.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", f, len(p.Containers))
	}
	c := p.Containers[0]
	if c.Image != image {
		t.Errorf("%s: image %q, want %s", f, c.Image, image)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range p.Volumes {
			if v.Name == m.Name && m.MountPath == "/runs" && v.PersistentVolumeClaim != nil &&
				(claims == nil || slices.Contains(claims, v.PersistentVolumeClaim.ClaimName)) {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("%s: no /runs from a PersistentVolumeClaim of runs-volume.yaml (%v)", f, claims)
	}
	return c
}

// envValue is the value of the container's variable name ("" unset).
func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
