package scenarios

// words.go: the small helpers of the one-line errors: which known name a
// typo was meant to be, and the article a name takes.

import "strings"

// Closest is what name was plausibly meant to be, of names: the names
// nearest to it by edit distance (all of them on a tie), when that is
// at most 1 for a name of up to 4 letters and at most 2 for a longer one;
// else the one name it begins, when it begins only one; else none.
func Closest(name string, names []string) []string {
	limit := 1
	switch {
	case len(name) < 3:
		limit = 0 // one or two letters are a step from every short name
	case len(name) >= 5:
		limit = 2
	}
	var near, prefixed []string
	best := limit + 1
	for _, n := range names {
		switch d := EditDistance(name, n); {
		case d > limit:
		case d < best:
			best, near = d, []string{n}
		case d == best:
			near = append(near, n)
		}
		if strings.HasPrefix(n, name) {
			prefixed = append(prefixed, n)
		}
	}
	switch {
	case len(near) > 0:
		return near
	case len(prefixed) == 1:
		return prefixed
	}
	return nil
}

// Indefinite is word with its indefinite article, as the word is said:
// "an etcd", "a redis", "a postgres".
func Indefinite(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}
