// The line search of the cutting-plane solvers with OCAS steps (Franc & Sonnenburg, JMLR 10, 2009): the minimiser
// of a convex phi(t) = F(w_b + t (w_c - w_b)) over t >= 0, from probes of phi's value and slope.
#pragma once

#include <algorithm>

namespace fastrank {

// `at0` is the probe at t = 0, with a negative slope; probe(t) returns a Probe {t, v, slope, ...} (v = phi(t),
// slope a subgradient there).  The bracket grows by doubling from t = 1 (to 1e6), then is bisected on the slope's
// sign.  The search stops once the tangents at the bracket's ends bound min phi within `enough` of the better end
// (phi is convex: it lies above both tangents), so it costs a few probes where phi is smooth or nearly linear on
// the bracket, instead of a fixed bracket width; also after `max_probes` bisections or at `width` relative width.
// Returns the better end: a point whose value is known exactly.
template <class Probe, class ProbeAt>
Probe convex_segment_minimum(const Probe& at0, ProbeAt&& probe, double enough, int max_probes, double width) {
  Probe lo = at0, hi = probe(1.0);
  while (hi.slope < 0.0 && hi.t < 1e6) {
    lo = hi;
    hi = probe(2.0 * hi.t);
  }
  for (int k = 0; k < max_probes && hi.t - lo.t > width * hi.t; ++k) {
    if (hi.slope >= 0.0) {
      const double tx = (hi.v - lo.v + lo.slope * lo.t - hi.slope * hi.t) / (lo.slope - hi.slope);
      if (std::min(lo.v, hi.v) - (lo.v + lo.slope * (tx - lo.t)) <= enough) break;
    }
    const Probe mid = probe(0.5 * (lo.t + hi.t));
    (mid.slope < 0.0 ? lo : hi) = mid;
  }
  return hi.v < lo.v ? hi : lo;
}

}  // namespace fastrank
