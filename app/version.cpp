// `haargrad --version` (see version.h).
#include "app/version.h"

#include "app/build_info.h"
#include "core/error.h"
#include "core/threads.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime_api.h>
#include <cudnn.h>
#endif

namespace hg::app {
namespace {

#ifdef HAARGRAD_WITH_CUDA
// 13000 -> "13.0" (CUDA's encoding: 1000 * major + 10 * minor).
std::string cuda_version_text(int v) { return str(v / 1000, ".", (v % 1000) / 10); }
// cuDNN 9: 90100 -> "9.1.0" (10000 * major + 100 * minor + patch).
std::string cudnn_version_text(size_t v) { return str(v / 10000, ".", (v % 10000) / 100, ".", v % 100); }

std::string cuda_line() {
  int runtime = 0, driver = 0, gpus = 0;
  const bool have_runtime = cudaRuntimeGetVersion(&runtime) == cudaSuccess;
  const bool have_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) {
    gpus = 0;
    cudaGetLastError();  // clear the error the query left behind
  }
  return str("cuda: built for sm_", HAARGRAD_CUDA_ARCHITECTURES, " with CUDA ", cuda_version_text(CUDART_VERSION),
             " (runtime ", have_runtime ? cuda_version_text(runtime) : "unknown", ", driver ",
             have_driver ? cuda_version_text(driver) : "none", "), ", gpus, gpus == 1 ? " GPU" : " GPUs",
             " visible\ncudnn: built with ", CUDNN_MAJOR, ".", CUDNN_MINOR, ".", CUDNN_PATCHLEVEL, " (runtime ",
             cudnn_version_text(cudnnGetVersion()), ")\n");
}
#endif

}  // namespace

std::string version_text() {
  std::string s = str("haargrad ", HAARGRAD_VERSION, " (commit ", HAARGRAD_GIT_COMMIT, ", ", HAARGRAD_BUILD_TYPE,
                      ", ", HAARGRAD_CXX_COMPILER, ")\n");
  // One line per optional part; a part that is not built says how to get it.
#ifdef HAARGRAD_WITH_CUDA
  s += cuda_line();
#else
  // configured with HAARGRAD_CUDA=OFF (scripts/quickstart.sh's choice without a working
  // nvidia-smi), or AUTO where nvcc was not found
  s += "cuda: not built (configured without it: cmake -DHAARGRAD_CUDA=ON on a machine with nvcc; "
       "scripts/quickstart.sh builds it only where nvidia-smi finds a GPU)\n";
#endif
#ifdef HAARGRAD_WITH_BLAS
  s += "blas: built\n";
#else
  s += "blas: not built (GEMM in plain loops; install libopenblas-dev and reconfigure)\n";
#endif
#ifdef _OPENMP
  s += "openmp: built\n";
#else
  s += "openmp: not built (CPU kernels on one thread)\n";
#endif
  // the optional parts a data-parallel or GPU-decoding run needs (README, "Building")
#ifdef HAARGRAD_WITH_MPI
  s += "mpi: built (mpirun -np N trains data-parallel)\n";
#else
  s += "mpi: not built (one process; install libopenmpi-dev and reconfigure)\n";
#endif
#ifdef HAARGRAD_WITH_NCCL
  s += "nccl: built\n";
#else
  s += "nccl: not built (CUDA runs are one process)\n";
#endif
#ifdef HAARGRAD_WITH_NVJPEG
  s += "nvjpeg: built\n";
#else
  s += "nvjpeg: not built (JPEGs decode on the CPU)\n";
#endif
  s += str("cpu: ", describe_cpu_threads(), "\n");
  return s;
}

}  // namespace hg::app
