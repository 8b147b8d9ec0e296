"""Peak resident memory of a dual RankRLS fit / path, in a fresh subprocess per case, reported
in units of one m x m float64 matrix (8 m^2 bytes) above the process's baseline."""

import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys
import numpy as np
import fastrank
m, mode = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(0)
X = rng.normal(size=(m, 50)); y = rng.normal(size=m)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if mode == "fit":
    fastrank.RankRLS(alpha=1.0, kernel="rbf", solver="dual").fit(X, y)
else:
    fastrank.rankrls_path(X, y, np.logspace(-3, 3, 31), estimator=fastrank.RankRLS(kernel="rbf"))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"delta_mb": (peak - base) / 1024.0, "mxm_mb": 8.0 * m * m / 2**20}))
"""


def main():
    for mode in ("fit", "path"):
        for m in (2000, 4000):
            out = subprocess.run([sys.executable, "-c", CHILD, str(m), mode], capture_output=True, text=True,
                                 check=True)
            r = json.loads(out.stdout)
            print(f"dual {mode:<4} m={m}: peak +{r['delta_mb']:.0f} MiB = {r['delta_mb'] / r['mxm_mb']:.2f} "
                  f"m x m matrices")


if __name__ == "__main__":
    main()
