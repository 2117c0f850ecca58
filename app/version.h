// What `haargrad --version` prints: the version, the git commit the build was configured at, the
// build type and compiler, and which optional parts are built (CUDA with its runtime, driver and
// cuDNN versions; BLAS; OpenMP) with the CPU thread setting.
#pragma once

#include <string>

namespace hg::app {

/// Several lines, the first "haargrad <version> (commit <hash>, <build type>, <compiler>)".
std::string version_text();

}  // namespace hg::app
