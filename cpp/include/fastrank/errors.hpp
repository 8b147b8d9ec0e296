// Error types of the core.  User-input errors are std::invalid_argument (-> ValueError);
// numerical breakdown is fastrank::LinAlgError (-> fastrank.LinAlgError, a subclass of
// numpy.linalg.LinAlgError); std::bad_alloc -> MemoryError.
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>

namespace fastrank {

struct LinAlgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}
// For hot loops: a literal message costs nothing until the check fails.
inline void require(bool condition, const char* message) {
  if (!condition) throw std::invalid_argument(message);
}

// A double for a message, %g-style ("1e-300", "4.25271e+21"): std::to_string's fixed six decimals
// print 1e-300 as "0.000000".
inline std::string format_number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

}  // namespace fastrank
