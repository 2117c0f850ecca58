// Allocation traces: text form, extrapolation to another batch, replay against the allocator's
// policy (see alloc_trace.h). The recording itself lives in memory.cpp, beside the allocator.
#include "core/alloc_trace.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "core/atomic_file.h"
#include "core/block_cache.h"
#include "core/error.h"
#include "core/parse_number.h"

namespace hg {
namespace {

constexpr const char* kHeader = "# haargrad allocation trace v1";

Category parse_category(std::string_view name, const std::string& where) {
  for (int i = 0; i < kNumCategories; ++i)
    if (name == category_name(static_cast<Category>(i))) return static_cast<Category>(i);
  throw Error(str(where, ": unknown category '", name, "'"));
}

int64_t parse_field(std::string_view text, const std::string& where, const char* what) {
  std::string why;
  const auto v = parse_decimal_int(text, &why);
  HG_CHECK(v && *v >= 0, where, ": ", what, " '", text, "' is not a non-negative integer",
           why.empty() ? "" : " (", why, why.empty() ? "" : ")");
  return *v;
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

std::string describe(const AllocEvent& e) {
  switch (e.kind) {
    case AllocEvent::Kind::alloc: return str("alloc #", e.id, " (", category_name(e.category), ")");
    case AllocEvent::Kind::free: return str("free #", e.id);
    case AllocEvent::Kind::step_end: return "step end";
  }
  return "?";
}

}  // namespace

int64_t AllocTrace::steps() const {
  return std::count_if(events.begin(), events.end(),
                       [](const AllocEvent& e) { return e.kind == AllocEvent::Kind::step_end; });
}

std::string trace_to_text(const AllocTrace& trace) {
  std::ostringstream os;
  os << kHeader << "\n# " << trace.note << "\n";
  for (const AllocEvent& e : trace.events) {
    switch (e.kind) {
      case AllocEvent::Kind::alloc:
        os << "a " << e.id << ' ' << e.bytes << ' ' << category_name(e.category) << '\n';
        break;
      case AllocEvent::Kind::free: os << "f " << e.id << '\n'; break;
      case AllocEvent::Kind::step_end: os << "s\n"; break;
    }
  }
  return os.str();
}

AllocTrace trace_from_text(const std::string& text, const std::string& source) {
  AllocTrace trace;
  std::istringstream in(text);
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = str(source, " line ", lineno);
    if (lineno == 1) {
      HG_CHECK(line == kHeader, source,
               " is not a haargrad allocation trace (the first line is not '", kHeader, "')");
      continue;
    }
    if (lineno == 2 && line.rfind("# ", 0) == 0) {
      trace.note = line.substr(2);
      continue;
    }
    const std::vector<std::string_view> w = split_words(line);
    if (w.empty() || w[0][0] == '#') continue;
    AllocEvent e;
    if (w[0] == "a" && w.size() == 4) {
      e.kind = AllocEvent::Kind::alloc;
      e.id = parse_field(w[1], where, "id");
      e.bytes = parse_field(w[2], where, "bytes");
      e.category = parse_category(w[3], where);
    } else if (w[0] == "f" && w.size() == 2) {
      e.kind = AllocEvent::Kind::free;
      e.id = parse_field(w[1], where, "id");
    } else if (w[0] == "s" && w.size() == 1) {
      e.kind = AllocEvent::Kind::step_end;
    } else {
      throw Error(str(where, ": expected 'a ID BYTES CATEGORY', 'f ID' or 's', got '", line, "'"));
    }
    trace.events.push_back(e);
  }
  HG_CHECK(lineno > 0, source, " is empty (expected a haargrad allocation trace)");
  return trace;
}

void save_trace(const AllocTrace& trace, const std::string& path) {
  io::write_file_atomic(path, trace_to_text(trace));
}

AllocTrace load_trace(const std::string& path) {
  return trace_from_text(io::read_file(path), path);
}

std::optional<int64_t> recorded_batch(const AllocTrace& trace) {
  const std::vector<std::string_view> w = split_words(trace.note);
  std::optional<int64_t> batch;
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    if (w[i] != "batch") continue;
    // "batches 1 and 2" is another word; "batch 2," keeps its digits
    std::string_view digits = w[i + 1];
    if (!digits.empty() && digits.back() == ',') digits.remove_suffix(1);
    if (const auto v = parse_decimal_int(digits)) batch = *v;
  }
  return batch;
}

AllocTrace extrapolate_trace(const AllocTrace& a, double xa, const AllocTrace& b, double xb,
                             double x) {
  HG_CHECK(xa != xb, "extrapolate_trace: the two traces were recorded at the same batch (", xa,
           ")");
  HG_CHECK(a.events.size() == b.events.size(), "extrapolate_trace: the traces at batch ", xa,
           " and ", xb, " differ in length (", a.events.size(), " and ", b.events.size(),
           " events): the run is not the same at both batches");
  AllocTrace out;
  out.note = str(a.note, " | extrapolated to batch ", x, " from batches ", xa, " and ", xb);
  out.events.reserve(a.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const AllocEvent &ea = a.events[i], &eb = b.events[i];
    HG_CHECK(ea.kind == eb.kind && ea.id == eb.id && ea.category == eb.category,
             "extrapolate_trace: event ", i, " differs beyond its bytes: ", describe(ea),
             " at batch ", xa, ", ", describe(eb), " at batch ", xb);
    AllocEvent e = ea;
    if (e.kind == AllocEvent::Kind::alloc && ea.bytes != eb.bytes) {
      const double bytes =
          static_cast<double>(ea.bytes) +
          (static_cast<double>(eb.bytes) - static_cast<double>(ea.bytes)) * (x - xa) / (xb - xa);
      e.bytes = std::max<int64_t>(256, (static_cast<int64_t>(std::ceil(bytes)) + 255) / 256 * 256);
    }
    out.events.push_back(e);
  }
  return out;
}

std::vector<ReplayStep> replay_trace(const AllocTrace& trace) {
  // The fake system hands out addresses 4 KiB apart beyond each segment; nothing is ever touched.
  uintptr_t next_address = uintptr_t(1) << 40;
  memory::detail::BlockCache cache(
      memory::detail::SystemMemory{[&next_address](size_t bytes) {
                                     void* p = reinterpret_cast<void*>(next_address);
                                     next_address += (bytes + 8191) / 4096 * 4096;
                                     return p;
                                   },
                                   [](void*) {}});
  struct Live {
    void* ptr;
    int64_t bytes;
  };
  std::unordered_map<int64_t, Live> live;
  int64_t live_bytes = 0;
  std::vector<ReplayStep> steps(1);
  auto step_start = [&] {
    ReplayStep s;
    s.live_peak = live_bytes;
    s.reserved_peak = s.reserved_end = cache.reserved();
    return s;
  };
  steps.back() = step_start();
  int64_t allocs_before = 0;
  bool open = false;  // events since the last step end
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const AllocEvent& e = trace.events[i];
    ReplayStep& s = steps.back();
    open = true;
    if (e.kind == AllocEvent::Kind::alloc) {
      HG_CHECK(live.count(e.id) == 0, "replay_trace: event ", i, " allocates #", e.id, " twice");
      live[e.id] = Live{cache.allocate(static_cast<size_t>(e.bytes), e.category), e.bytes};
      live_bytes += e.bytes;
    } else if (e.kind == AllocEvent::Kind::free) {
      auto it = live.find(e.id);
      HG_CHECK(it != live.end(), "replay_trace: event ", i, " frees #", e.id,
               ", which is not allocated");
      cache.free(it->second.ptr);
      live_bytes -= it->second.bytes;
      live.erase(it);
    } else {
      cache.step_done();  // as memory::step_done
    }
    s.live_peak = std::max(s.live_peak, live_bytes);
    s.reserved_peak = std::max(s.reserved_peak, cache.reserved());
    s.reserved_end = cache.reserved();
    s.system_allocs = cache.system_allocs() - allocs_before;
    if (e.kind == AllocEvent::Kind::step_end) {
      allocs_before = cache.system_allocs();
      steps.push_back(step_start());
      open = false;
    }
  }
  if (!open) steps.pop_back();
  return steps;
}

}  // namespace hg
