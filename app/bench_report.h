// Output of `haargrad bench`: rows as JSON objects (timm benchmark.py's column names plus ours),
// the JSON / CSV file, and the printed tables (results, memory, ratios, per-op breakdown).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/bench_run.h"

namespace hg::app {

/// One row as an ordered JSON object. Columns (times in ms, memory in MiB = 2^20 bytes):
///   model, precision, wtconv (null for ConvNeXt), device, status ("ok" / "oom"), error,
///   infer_samples_per_sec (= batch / median step), infer_step_time (median), infer_step_time_min,
///   _max, _mean, infer_batch_size, infer_img_size, the same seven for train_, param_count
///   (trainable, millions, 2 decimals as timm prints), param_count_exact, param_count_fixed,
///   requested_batch_size, steps, warmup, for infer_ and train_: peak_<category>_mib (parameters,
///   gradients, optimizer_state, activations, workspace), peak_total_mib, reserved_mib (peak),
///   reserved_ratio (reserved / peak total), system_allocs (all of the timed steps),
///   device_used_mib (cudaMemGetInfo after the timed steps), and baseline_device_used_mib.
///   Measurements of a failed row are null. With a breakdown: "breakdown": {op type: {forward_ms,
///   backward_ms}} (JSON only).
nlohmann::ordered_json row_json(const BenchResult& r);

/// Writes the rows to `path`: a JSON array of row objects for *.json, CSV (header + one line per
/// row, nulls empty, no breakdown) for *.csv. Throws hg::Error for another extension or when the
/// file cannot be written.
void write_rows(const std::string& path, const std::vector<BenchResult>& rows);
/// Throws hg::Error unless `path` ends in .json or .csv and can be written there
/// (train::check_output_file: its folder exists and is writable; checked before any row runs).
void check_output_path(const std::string& path);

/// The --output of the bench commands (bench, bench-data, bench-augment), one rule for all:
/// check_rows_output throws hg::Error, naming `option` (e.g. "bench-data: --output") and the file,
/// unless `path` ends in .json or .csv (any case) and can be written (train::check_output_file);
/// write_rows_file writes `rows` there as a JSON array of the row objects (*.json) or as CSV
/// (*.csv: a header of the scalar keys in order of appearance, one line per row, nulls empty;
/// object and list values are left out). An existing file is replaced only when it holds such
/// rows, whose first column is `first_column` (the command's: "model", "impl", ...; app/
/// model_from_args.h, check_replaces_rows_only).
void check_rows_output(const std::string& path, const std::string& option,
                       const std::string& first_column);
/// Whether write_rows_file writes `path` as CSV (it ends in .csv, any case).
bool csv_output(const std::string& path);
void write_rows_file(const std::string& path, const std::string& option,
                     const std::vector<nlohmann::ordered_json>& rows,
                     const std::string& first_column);

/// Prints the results table, the memory table and the ratio table (WTConvNeXt / ConvNeXt at equal
/// precision and batch; fused / unfused) to stdout.
void print_tables(const std::vector<BenchResult>& rows);
/// Prints one row's per-op breakdown (ms forward / backward per op type, % of their sum, and the
/// sum next to the measured step).
void print_breakdown(const BenchResult& r);

}  // namespace hg::app
