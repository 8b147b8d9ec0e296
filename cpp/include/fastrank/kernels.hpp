// Kernel matrices (scikit-learn's conventions): linear x.z, polynomial (gamma x.z + coef0)^degree,
// Gaussian exp(-gamma |x - z|^2).  Inner products go through BLAS dgemm; the elementwise
// transform runs in parallel_for threads.  Precomputed kernels never reach this file.
// Accuracy: Gaussian distances are translation invariant, so both operands are centred by the mean
// of the training rows before the expansion |z|^2 + |x|^2 - 2 z.x (a large common offset no longer
// cancels), and entries where the expansion could still lose more than 1e-11 of the value are
// recomputed from the differences.  Every kernel value is checked: overflow, or a non-integer
// polynomial degree on a negative base, raises std::invalid_argument naming the parameters.
#pragma once
#include "fastrank/types.hpp"

namespace fastrank {

enum class KernelType : int { Linear = 0, RBF = 1, Polynomial = 2 };

struct KernelSpec {
  KernelType type = KernelType::Linear;
  double gamma = 1.0;
  double degree = 3.0;
  double coef0 = 1.0;
};

// out <- K(X, X), m x m, exactly symmetric (Gaussian diagonal exactly 1).
void kernel_train(const KernelSpec& spec, RowMatrixCRef X, MatrixRef out, int n_threads);
Matrix kernel_train(const KernelSpec& spec, RowMatrixCRef X, int n_threads);
// out <- K(Z, X), p x m.
void kernel_cross(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixRef out, int n_threads);
Matrix kernel_cross(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, int n_threads);
// out <- K(Z, X), p x m, each entry from its two rows alone, in a fixed order over the features (no centring on
// the block, no BLAS): a value never depends on which other rows share the call.  The on-line learners decide an
// update at exact score ties, so a stream cut into calls must see bit-identical kernel values.  O(p m d).
void kernel_cross_rowwise(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixRef out, int n_threads);
// K(Z, X) * coef from kernel_cross_rowwise values, each entry summed term by term in the order of X's rows with
// every product rounded on its own: the on-line learners' scores as their passes form them, so that terms that
// cancel there (an exact tie) cancel here.  Row blocks of Z: memory O(block * m).
Matrix kernel_predict_rowwise(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixCRef coef,
                              int n_threads);
// K(Z, X) * coef (p x v), computed in row blocks of Z so memory stays O(block * m).
Matrix kernel_predict(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixCRef coef, int n_threads);

}  // namespace fastrank
