// Kernel matrices (scikit-learn's conventions): linear x.z, polynomial (gamma x.z + coef0)^degree,
// Gaussian exp(-gamma |x - z|^2).  Inner products go through BLAS dgemm; the elementwise
// transform runs in parallel_for threads.  Precomputed kernels never reach this file.
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
// K(Z, X) * coef (p x v), computed in row blocks of Z so memory stays O(block * m).
Matrix kernel_predict(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixCRef coef, int n_threads);

}  // namespace fastrank
