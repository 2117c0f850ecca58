// Per-process CUDA context: the cuBLAS and cuDNN handles (created on first use, queuing on the
// calling thread's stream, hg::cuda::stream()), the TF32 switch, and whether a GPU is present at
// all.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#include <cstddef>
#include <shared_mutex>

#include "core/cuda_stream.h"

namespace hg::cuda {

/// True when a CUDA device is usable (driver present and at least one GPU).
bool available();
cublasHandle_t cublas();
cudnnHandle_t cudnn();
/// TF32 tensor-core math for cuBLAS and cuDNN (precision "tf32"); off by default (exact fp32).
void set_allow_tf32(bool on);
bool allow_tf32();
/// How kernels/cuda/gemm_lt.cpp picks a cuBLASLt algorithm for a GEMM shape. On (the default, as
/// timm's cudnn.benchmark): the first call of a shape, outside a graph capture, times the
/// heuristic's candidates and keeps the fastest for the process (measured on an H100: the
/// heuristic's first is up to 1.27x slower than its best on ConvNeXt-T's MLP GEMMs). Off: the
/// heuristic's first, so every process takes the same algorithms and a rerun the same bits (a
/// timed choice can differ between processes where two candidates are within noise). Read at
/// every GEMM call; the config key and bench option `gemm_autotune` set it.
void set_gemm_autotune(bool on);
bool gemm_autotune();
/// Streaming multiprocessors of the current device (read once; 132 on an H200). Kernels that size
/// their grid or a reduction split by it stay deterministic run to run on one device.
int multiprocessor_count();
/// The most dynamic shared memory one block may opt in to on the current device, bytes (read
/// once; 227 KB on an H200). A kernel that asks for more than 48 KB must opt in first
/// (cudaFuncSetAttribute, cudaFuncAttributeMaxDynamicSharedMemorySize).
size_t max_dynamic_smem();
/// Lets `kernel` (a __global__ function's address) launch with up to max_dynamic_smem() bytes of
/// dynamic shared memory: the opt-in above 48 KB, done once per kernel (later calls only look it
/// up). Call it before the kernel's first launch that may need more than 48 KB.
void allow_max_dynamic_smem(const void* kernel);
/// Blocks of `threads` threads and `smem` dynamic shared-memory bytes of `kernel` that fit one
/// multiprocessor at once (cudaOccupancyMaxActiveBlocksPerMultiprocessor; 0: none fits). Opts the
/// kernel in first (allow_max_dynamic_smem). Computed once per (kernel, threads, smem), so that
/// kernels sizing their grid by it (deterministic splits) pay no query per launch.
int resident_blocks(const void* kernel, int threads, size_t smem);
/// Waits on the host until `event` has completed, sleeping `poll_us` between queries instead of
/// spinning as cudaEventSynchronize does (CUDA's default schedule). For helper threads that wait
/// beside the training thread (the loader's GPU thread): measured on the H200
/// (dev/nvjpeg_probe.cu), a thread spinning in a CUDA wait slows another thread's kernel launches
/// by tens of percent. Adds up to poll_us of latency. Throws hg::Error on a CUDA error.
void wait_polling(cudaEvent_t event, int poll_us = 50);
/// Held exclusively by a thread while it captures a CUDA graph (train/step_graph.cpp), and shared
/// by helper threads around GPU work a capture must not overlap (the JPEG decoder's
/// NvjpegDecoder::decode_ahead: its device-wide waits, legacy-stream events and allocations). Even
/// in thread-local capture mode, a legacy-stream operation or a device-wide synchronisation from
/// another thread meets the capturing stream (a blocking stream, core/cuda_stream.h) and
/// invalidates the capture; with this lock a capture waits for a running decode (milliseconds, once
/// per run) and a decode waits for the capture.
std::shared_mutex& capture_mutex();
/// Blocks until all queued GPU work is done; throws on an asynchronous kernel error.
void synchronize();

}  // namespace hg::cuda
