// Fills fastrank::lapack's function table from SciPy's Cython LAPACK/BLAS capsules (SciPy's
// bundled OpenBLAS), installs the core's interrupt hook and registers the core's exception types.
#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>

#include <exception>
#include <memory>
#include <new>

#include "fastrank/errors.hpp"
#include "fastrank/interrupt.hpp"
#include "fastrank/lapack.hpp"

namespace py = pybind11;

namespace {

template <class Fn>
Fn capsule_function(const py::dict& capi, const char* name) {
  if (!capi.contains(name)) throw std::runtime_error(std::string("SciPy does not export ") + name);
  py::object capsule = capi[name];
  void* pointer = PyCapsule_GetPointer(capsule.ptr(), PyCapsule_GetName(capsule.ptr()));
  if (pointer == nullptr) throw py::error_already_set();
  return reinterpret_cast<Fn>(pointer);
}

// Python runs signal handlers only in its main thread: other threads never see an interrupt.
unsigned long main_thread_ident = 0;
// The exception a signal handler raised (KeyboardInterrupt for Ctrl-C), held from the hook until
// the translator below hands it back to Python.  Main thread only, under the GIL.
py::error_already_set* pending_interrupt = nullptr;

bool python_signal_pending() {
  if (PyThread_get_thread_ident() != main_thread_ident) return false;
  py::gil_scoped_acquire hold;
  if (PyErr_CheckSignals() == 0) return false;
  delete pending_interrupt;
  pending_interrupt = new py::error_already_set();
  return true;
}

}  // namespace

void bind_lapack(py::module_& m) {
  namespace lp = fastrank::lapack;
  py::dict lapack_capi = py::module_::import("scipy.linalg.cython_lapack").attr("__pyx_capi__");
  py::dict blas_capi = py::module_::import("scipy.linalg.cython_blas").attr("__pyx_capi__");
  lp::Table t;
  t.dgemm = capsule_function<lp::dgemm_t>(blas_capi, "dgemm");
  t.dsyrk = capsule_function<lp::dsyrk_t>(blas_capi, "dsyrk");
  t.dtrsm = capsule_function<lp::dtrsm_t>(blas_capi, "dtrsm");
  t.dpotrf = capsule_function<lp::dpotrf_t>(lapack_capi, "dpotrf");
  t.dpotrs = capsule_function<lp::dpotrs_t>(lapack_capi, "dpotrs");
  t.dsyevd = capsule_function<lp::dsyevd_t>(lapack_capi, "dsyevd");
  t.dgesv = capsule_function<lp::dgesv_t>(lapack_capi, "dgesv");
  t.dpocon = capsule_function<lp::dpocon_t>(lapack_capi, "dpocon");
  t.dpotri = capsule_function<lp::dpotri_t>(lapack_capi, "dpotri");
  t.dsytrd = capsule_function<lp::dsytrd_t>(lapack_capi, "dsytrd");
  t.dormtr = capsule_function<lp::dormtr_t>(lapack_capi, "dormtr");
  lp::install(t);
  main_thread_ident = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  // A child forked from another thread runs its signal handlers in that thread.
  py::module_::import("os").attr("register_at_fork")(
      py::arg("after_in_child") = py::cpp_function([] { main_thread_ident = PyThread_get_thread_ident(); }));
  fastrank::interrupt::install(python_signal_pending);

  m.def(
      "cholesky_lower",
      [](Eigen::Ref<fastrank::Matrix> a) {
        if (a.rows() != a.cols()) throw std::invalid_argument("cholesky_lower: the matrix must be square");
        return fastrank::lapack::potrf_lower(a);
      },
      py::arg("a").noconvert(), py::call_guard<py::gil_scoped_release>(),
      "In place: the lower triangle of a (Fortran-ordered float64, square) becomes its Cholesky factor "
      "(blocked above lapack panel size); returns False if a is not numerically positive definite.");
  m.attr("cholesky_panel") = fastrank::lapack::kCholeskyPanel;

  py::object numpy_linalg_error = py::module_::import("numpy.linalg").attr("LinAlgError");
  py::register_exception<fastrank::LinAlgError>(m, "LinAlgError", numpy_linalg_error);
  // An allocation the memory guard did not foresee: MemoryError saying what to do, not "std::bad_alloc".
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const fastrank::Interrupted&) {
      if (pending_interrupt) {
        const std::unique_ptr<py::error_already_set> error(pending_interrupt);
        pending_interrupt = nullptr;
        error->restore();
      } else {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
      }
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError,
                      "fastrank: out of memory allocating a work array in the compiled core. For large data use "
                      "RankRLS(solver='cg') or basis_vectors; FASTRANK_MAX_DENSE_BYTES lowers the limit at which "
                      "the dense solvers refuse a problem up front");
    }
  });
}
