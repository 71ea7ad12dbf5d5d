package sweep

import "math"

// Wilson returns the 95% Wilson score interval for k successes in n
// trials: unlike the normal approximation it stays within [0, 1] and is
// not zero-width at k = 0 or k = n, which matters here: "0 of 30 trials"
// still allows a rate up to about 11%.
func Wilson(k, n int) (low, high float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959963984540054 // the 97.5th percentile of the normal
	p := float64(k) / float64(n)
	nf := float64(n)
	denom := 1 + z*z/nf
	centre := (p + z*z/(2*nf)) / denom
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / denom
	return math.Max(0, centre-half), math.Min(1, centre+half)
}
