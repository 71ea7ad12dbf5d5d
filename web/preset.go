// preset.go starts a page's presets (a sweep, a hunt, a cost run): the
// request names one by its ID, and the page may start nothing else.

package web

import (
	"encoding/json"
	"net/http"
)

// startPreset answers a request to start one of presets ({"preset": ID},
// as the page sends it): 202 once start has started it, 409 when it
// cannot (a run in progress), 404 when no preset of this kind (what:
// "sweep", "hunt", "cost") has that ID.
func startPreset[P any](w http.ResponseWriter, req *http.Request, what string, presets []P, id func(P) string, start func(P) error) {
	var body struct {
		Preset string `json:"preset"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 4096)).Decode(&body); err != nil {
		refuse(w, http.StatusBadRequest, "bad request: %v", err)
		return
	}
	for _, p := range presets {
		if id(p) != body.Preset {
			continue
		}
		if err := start(p); err != nil {
			refuse(w, http.StatusConflict, "%v", err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"preset": id(p)})
		return
	}
	refuse(w, http.StatusNotFound, "no %s preset %q", what, body.Preset)
}
