#include "core/cuda_queues.h"

#include <cstdlib>

namespace hg {

std::string default_cuda_queues() {
  const char* name = "CUDA_DEVICE_MAX_CONNECTIONS";
  setenv(name, "32", /*overwrite=*/0);  // fails only without memory: then the driver's default
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace hg
