// Eigen aliases shared by the whole core.
#pragma once
#include <Eigen/Core>
#include <cstdint>

namespace fastrank {

using Index = Eigen::Index;
// numpy's default (C order) layout: maps zero-copy from a C-contiguous float64 array.
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// LAPACK's layout: internal work matrices (kernel, system and eigenvector matrices).
using Matrix = Eigen::MatrixXd;
using Vector = Eigen::VectorXd;
using IndexVector = Eigen::Matrix<std::int64_t, Eigen::Dynamic, 1>;

using RowMatrixCRef = Eigen::Ref<const RowMatrix>;
using MatrixCRef = Eigen::Ref<const Matrix>;
using MatrixRef = Eigen::Ref<Matrix>;
using VectorCRef = Eigen::Ref<const Vector>;
using IndexVectorCRef = Eigen::Ref<const IndexVector>;

}  // namespace fastrank
