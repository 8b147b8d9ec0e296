// The one private extension module.  Each area binds itself in bind_<area>.cpp.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_lapack(py::module_& m);    // installs SciPy's LAPACK/BLAS, registers exceptions
void bind_groups(py::module_& m);    // query groups: (order, offsets) from group codes
void bind_kernels(py::module_& m);   // kernel matrices
void bind_rankrls(py::module_& m);   // RankRLS / MPRank dense solvers and paths
void bind_measures(py::module_& m);  // ranking measures
void bind_cv(py::module_& m);        // leave-pair-out / leave-group-out shortcuts
void bind_cg(py::module_& m);        // conjugate gradient on sparse data
void bind_sparse_rls(py::module_& m);  // subset-of-regressors RankRLS
void bind_online(py::module_& m);    // PRank, OAP-BPM family, Widrow-Hoff, on-line MPRank
void bind_svrank(py::module_& m);    // SVRank pair-loss oracle and cutting-plane solvers
void bind_ranksvm(py::module_& m);   // RankSVM: pair-free oracle, linear and kernel solvers
void bind_rankboost(py::module_& m);  // RankBoost with threshold weak rankers

PYBIND11_MODULE(_core, m, py::mod_gil_not_used()) {
  m.doc() = "fastrank's compiled core (private; use the fastrank package)";
  bind_lapack(m);
  bind_groups(m);
  bind_kernels(m);
  bind_rankrls(m);
  bind_measures(m);
  bind_cv(m);
  bind_cg(m);
  bind_sparse_rls(m);
  bind_online(m);
  bind_svrank(m);
  bind_ranksvm(m);
  bind_rankboost(m);
}
