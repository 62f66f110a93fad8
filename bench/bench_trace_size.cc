// Traces of any size (issue 29; BENCHMARKS.md "Traces of any size (issue 29)"): what a span costs in each export
// format, how fast and in how much memory a stored trace of millions of spans streams out, and which stored form is
// smaller and faster.
//
// Usage:
//   bench_trace_size sizes [SYNTH_SPANS]        bytes per span: xsp-trace-v3 (stored), chrome, otlp, perfetto,
//                                              perfetto.gz (zlib level 6) on the GPU fixtures and a synthetic trace
//   bench_trace_size stored [REPEATS]          stored form: xsp-trace-v3+zstd vs .pftrace+zstd (level 3), bytes and
//                                              encode/decode speed (median, range)
//   bench_trace_size stream [REPEATS] [FORMATS] MILLIONS...
//                                              export of a stored SQLite trace of MILLIONS million spans through the
//                                              streaming path (export_stored_trace); FORMATS: comma list of perfetto,
//                                              chrome, otlp (default perfetto). Each export runs in a fresh child
//                                              process whose peak RSS (VmHWM) is reported whole: flat means the same
//                                              for 1, 10 and 50 million spans.
//
// Synthetic traces: per measured batch one MODEL span (tag batch=N) over 10 FRAMEWORK ops on one host thread, each op
// with a SYSTEM launch (correlation id, tag cbid) and a KERNEL span on GPU 0 stream 7 (grid and block int lists),
// durations jittered by a fixed-seed generator: 31 spans per batch, 60 distinct names. A stored trace of N spans is
// written as an xsp-trace-v3 blob by a generator that emits the format (docs/store.md) span by span into zstd's
// streaming compressor and then into the SQLite blob with sqlite3_blob_write, so that building a 50-million-span
// store needs no 50-million-span Trace in memory; the 1-million-span case is checked against decode_trace().
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "xsp/store/store.h"
#include "xsp/store/trace_export.h"
#include "xsp/trace/export.h"
#include "xsp/trace/perfetto.h"
#include "xsp/trace/serialize.h"

using namespace xsp;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::int64_t status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::atoll(line.c_str() + n + 1) * 1024;
  }
  return 0;
}

using bench::Stats;
using bench::stats;

fs::path make_temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "xsp-bench-trace-size-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("bench_trace_size: mkdtemp");
    std::exit(1);
  }
  return tmpl;
}

// ---- the synthetic trace, as spans or as an xsp-trace-v3 payload ------------------------------------------------

constexpr int kOpsPerBatch = 10;
constexpr std::uint64_t kSpansPerBatch = 1 + 3 * kOpsPerBatch;
constexpr std::uint64_t kHostThread = 4242;
constexpr std::int64_t kStart = 1'000'000'000;

// The strings of the synthetic trace, in string-table order.
std::vector<std::string> synthetic_strings() {
  std::vector<std::string> s = {"predict", "batch", "cbid", "grid", "block", "cudaLaunchKernel"};
  for (int i = 0; i < 27; ++i) s.push_back("aten::op_" + std::to_string(i));
  for (int i = 0; i < 27; ++i) s.push_back("void kernel_" + std::to_string(i) + "<float, 128>(float const*, float*)");
  return s;
}
constexpr std::uint64_t kPredict = 0, kBatch = 1, kCbid = 2, kGrid = 3, kBlock = 4, kLaunch = 5, kOp0 = 6,
                        kKernel0 = 33;

// Calls emit(span) for spans 0..n-1 of the synthetic trace, in start order.
void synthetic_spans(std::uint64_t n, const std::vector<std::string>& strings,
                     const std::function<void(const Span&)>& emit) {
  std::mt19937_64 rng(29);
  std::int64_t t = kStart;
  Span s;
  std::uint64_t emitted = 0;
  for (std::int64_t batch = 0; emitted < n; ++batch) {
    const SpanId model = emitted + 1;
    const std::int64_t batch_start = t;
    const std::int64_t batch_end = batch_start + 1 + kOpsPerBatch * 2100;
    s = Span{};
    s.id = model;
    s.level = Level::kModel;
    s.parent_rule = ParentRule::kNone;
    s.name = strings[kPredict];
    s.start_ns = batch_start;
    s.end_ns = batch_end;
    s.track = Track::host_thread(kHostThread);
    s.tags = {Tag(strings[kBatch], batch)};
    emit(s);
    if (++emitted == n) return;
    std::int64_t op_start = batch_start + 1;
    for (int i = 0; i < kOpsPerBatch && emitted < n; ++i) {
      const std::uint64_t r = rng();
      const SpanId op = emitted + 1;
      const std::uint64_t corr = op;
      s = Span{};
      s.id = op;
      s.parent_id = model;
      s.level = Level::kFramework;
      s.parent_rule = ParentRule::kContext;
      s.name = strings[kOp0 + r % 27];
      s.start_ns = op_start;
      s.end_ns = op_start + 1500 + static_cast<std::int64_t>(r >> 40) % 500;
      s.track = Track::host_thread(kHostThread);
      emit(s);
      if (++emitted == n) return;
      Span l;
      l.id = op + 1;
      l.parent_id = op;
      l.level = Level::kSystem;
      l.parent_rule = ParentRule::kContext;
      l.name = strings[kLaunch];
      l.start_ns = op_start + 100;
      l.end_ns = op_start + 250 + static_cast<std::int64_t>(r >> 20) % 50;
      l.track = Track::host_thread(kHostThread);
      l.correlation_id = corr;
      l.tags = {Tag(strings[kCbid], std::int64_t{211})};
      emit(l);
      if (++emitted == n) return;
      Span k;
      k.id = op + 2;
      k.parent_id = op + 1;
      k.level = Level::kKernel;
      k.parent_rule = ParentRule::kCorrelation;
      k.name = strings[kKernel0 + r % 27];
      k.start_ns = op_start + 400;
      k.end_ns = op_start + 1000 + static_cast<std::int64_t>(r >> 10) % 400;
      k.track = Track::stream(0, 7);
      k.correlation_id = corr;
      k.tags = {Tag(strings[kGrid], std::vector<std::int64_t>{static_cast<std::int64_t>(64 + r % 1024), 1, 1}),
                Tag(strings[kBlock], std::vector<std::int64_t>{256, 1, 1})};
      emit(k);
      ++emitted;
      op_start += 2100;
    }
    t = batch_end + 5000;
  }
}

Trace synthetic_trace(std::uint64_t n) {
  Trace t;
  t.spans.reserve(n);
  synthetic_spans(n, synthetic_strings(), [&](const Span& s) { t.spans.push_back(s); });
  t.counters = {{"framework.dropped_spans", 0}};
  return t;
}

// The xsp-trace-v3 payload of synthetic_trace(n), emitted in pieces to `sink` (serialize.cc's layout, docs/store.md).
class PayloadEmitter {
 public:
  explicit PayloadEmitter(std::function<void(const std::uint8_t*, std::size_t)> sink) : sink_(std::move(sink)) {}
  void emit(std::uint64_t n) {
    const std::vector<std::string> strings = synthetic_strings();
    varint(strings.size());
    for (const std::string& s : strings) str(s);
    str("CLOCK_MONOTONIC");
    svarint(0);
    str("cupti");
    varint(1);  // counters
    str("framework.dropped_spans");
    varint(0);
    for (int i = 0; i < 6; ++i) varint(0);  // assembly report
    varint(n);
    SpanId prev_id = 0;
    std::int64_t prev_start = 0;
    auto index = [&](const std::string& s) {
      return static_cast<std::uint64_t>(std::find(strings.begin(), strings.end(), s) - strings.begin());
    };
    synthetic_spans(n, strings, [&](const Span& s) {
      svarint(static_cast<std::int64_t>(s.id - prev_id));
      varint(s.parent_id);
      byte(static_cast<std::uint8_t>(s.level));
      byte(static_cast<std::uint8_t>(s.parent_rule));
      varint(index(s.name));
      svarint(s.start_ns - prev_start);
      svarint(s.end_ns - s.start_ns);
      varint(s.track.is_device() ? std::uint64_t{s.track.device} + 1 : 0);
      varint(s.track.id);
      varint(s.correlation_id);
      varint(s.tags.size());
      for (const Tag& t : s.tags) {
        varint(index(t.key));
        byte(static_cast<std::uint8_t>(t.type));
        if (t.type == TagType::kInt) {
          svarint(*t.as_int());
        } else {
          const std::vector<std::int64_t> xs = t.as_int_list();
          varint(xs.size());
          for (std::int64_t x : xs) svarint(x);
        }
      }
      prev_id = s.id;
      prev_start = s.start_ns;
      if (buf_.size() > (1 << 16)) flush();
    });
    varint(0);  // processes
    flush();
  }

 private:
  void byte(std::uint8_t b) { buf_.push_back(b); }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<std::uint8_t>(v | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<std::uint8_t>(v));
  }
  void svarint(std::int64_t v) { varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63)); }
  void str(const std::string& s) {
    varint(s.size());
    buf_.insert(buf_.end(), s.begin(), s.end());
  }
  void flush() {
    sink_(buf_.data(), buf_.size());
    buf_.clear();
  }
  std::function<void(const std::uint8_t*, std::size_t)> sink_;
  std::vector<std::uint8_t> buf_;
};

// Writes the synthetic trace of n spans as an xsp-trace-v3 blob to `file`: a counting pass for the header's payload
// size, then the payload through ZSTD_compressStream2 (level 3, content size and checksum, as encode_trace).
void write_synthetic_blob(std::uint64_t n, const fs::path& file) {
  std::uint64_t payload = 0;
  PayloadEmitter([&](const std::uint8_t*, std::size_t k) { payload += k; }).emit(n);
  std::ofstream out(file, std::ios::binary);
  out.write("XSPT\x03", 5);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(payload >> (8 * i)));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setPledgedSrcSize(cctx, payload);
  std::vector<char> zout(ZSTD_CStreamOutSize());
  auto pump = [&](const std::uint8_t* data, std::size_t k, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{data, k, 0};
    for (;;) {
      ZSTD_outBuffer o{zout.data(), zout.size(), 0};
      const std::size_t rc = ZSTD_compressStream2(cctx, &o, &in, mode);
      if (ZSTD_isError(rc)) {
        std::fprintf(stderr, "bench_trace_size: zstd: %s\n", ZSTD_getErrorName(rc));
        std::exit(1);
      }
      out.write(zout.data(), static_cast<std::streamsize>(o.pos));
      if (mode == ZSTD_e_end ? rc == 0 : in.pos == in.size) break;
    }
  };
  PayloadEmitter([&](const std::uint8_t* d, std::size_t k) { pump(d, k, ZSTD_e_continue); }).emit(n);
  pump(nullptr, 0, ZSTD_e_end);
  ZSTD_freeCCtx(cctx);
}

// A store at `db` holding one evaluation whose one run's trace is the blob in `blob_file` (copied in by
// sqlite3_blob_write, 1 MiB at a time).
void make_store(const fs::path& db, const fs::path& blob_file) {
  {
    EvaluationRecord r;
    r.status = "complete";
    r.created_at = "2026-11-29T00:00:00Z";
    r.model_name = "synthetic";
    r.model_version = "1";
    r.framework_name = "none";
    r.framework_version = "0";
    r.device = "cuda:0";
    r.scenario = "batch-sweep";
    r.batch_sizes = {1};
    r.trace_level = TraceLevel::kKernel;
    r.settings = nlohmann::json::object();
    r.system = nlohmann::json::object();
    RunRecord run;
    run.batch_size = 1;
    run.trace_level = TraceLevel::kKernel;
    r.runs.push_back(run);
    Store::open(db)->save(r);
  }
  const auto size = static_cast<sqlite3_int64>(fs::file_size(blob_file));
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  const std::string sql = "UPDATE runs SET trace = zeroblob(" + std::to_string(size) + ")";
  if (sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "bench_trace_size: %s\n", sqlite3_errmsg(h));
    std::exit(1);
  }
  sqlite3_blob* b = nullptr;
  if (sqlite3_blob_open(h, "main", "runs", "trace", 1, 1, &b) != SQLITE_OK) {
    std::fprintf(stderr, "bench_trace_size: %s\n", sqlite3_errmsg(h));
    std::exit(1);
  }
  std::ifstream in(blob_file, std::ios::binary);
  std::vector<char> buf(1 << 20);
  sqlite3_int64 off = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto k = static_cast<int>(in.gcount());
    if (k == 0) break;
    sqlite3_blob_write(b, buf.data(), k, static_cast<int>(off));
    off += k;
  }
  sqlite3_blob_close(b);
  sqlite3_close(h);
}

// ---- sizes ----------------------------------------------------------------------------------------------------

std::size_t gzip_size(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);  // windowBits + 16: a gzip stream
  std::vector<unsigned char> out(1 << 20);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::size_t total = 0;
  int rc = Z_OK;
  do {
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    rc = deflate(&z, Z_FINISH);
    total += out.size() - z.avail_out;
  } while (rc == Z_OK);
  deflateEnd(&z);
  return total;
}

EvaluationRecord fixture_record(const std::string& name, const fs::path& dir, RunRecord& run) {
  const fs::path copy = dir / name;
  fs::copy_file(fs::path(XSP_SOURCE_DIR) / "tests" / "fixtures" / "gpu" / name, copy,
                fs::copy_options::overwrite_existing);
  EvaluationRecord r = *Store::open(copy)->load(1);
  run = choose_run(r, {});
  return r;
}

void size_row(const std::string& name, const EvaluationRecord& record, const RunRecord& run) {
  const Trace& t = run.trace;
  const double n = static_cast<double>(t.spans.size());
  const TraceResource res = trace_resource(record, run);
  std::ostringstream chrome, otlp, pf;
  write_chrome_trace(chrome, t, res);
  write_otlp_json(otlp, t, res, run.trace_id.empty() ? random_trace_id() : run.trace_id);
  write_perfetto_trace(pf, t, res);
  std::printf("%-34s %10zu %8.1f %8.1f %8.1f %9.1f %11.1f\n", name.c_str(), t.spans.size(), encode_trace(t).size() / n,
              chrome.str().size() / n, otlp.str().size() / n, pf.str().size() / n, gzip_size(pf.str()) / n);
}

int sizes(std::uint64_t synth_spans) {
  const fs::path dir = make_temp_dir();
  std::printf("bytes per span\n%-34s %10s %8s %8s %8s %9s %11s\n", "trace", "spans", "xspt-v3", "chrome", "otlp",
              "perfetto", "perfetto.gz");
  for (const char* f :
       {"resnet18_bs1_kernel_h200.db", "scenario_server_kernel_h200.db", "generation_counters_h200.db"}) {
    RunRecord run;
    const EvaluationRecord r = fixture_record(f, dir, run);
    size_row(f, r, run);
  }
  {
    std::ifstream in(fs::path(XSP_SOURCE_DIR) / "tests" / "fixtures" / "gpu" / "two_streams_h100.xspt",
                     std::ios::binary);
    const std::vector<std::uint8_t> blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EvaluationRecord r;
    r.model_name = "two_streams";
    RunRecord run;
    run.trace = decode_trace(blob);
    size_row("two_streams_h100.xspt", r, run);
  }
  {
    EvaluationRecord r;
    r.model_name = "synthetic";
    RunRecord run;
    run.trace = synthetic_trace(synth_spans);
    size_row("synthetic", r, run);
  }
  fs::remove_all(dir);
  return 0;
}

// ---- stored form --------------------------------------------------------------------------------------------------

int stored(int repeats) {
  const fs::path dir = make_temp_dir();
  std::printf(
      "stored form, %d repeats (median, range): xsp-trace-v3+zstd (encode_trace/decode_trace) vs .pftrace + zstd "
      "level 3 (write_perfetto_trace + ZSTD_compress / ZSTD_decompress; no .pftrace reader back to spans "
      "exists, so its decode is decompression only)\n",
      repeats);
  std::printf("%-30s %10s %-10s %12s %26s %26s\n", "trace", "spans", "form", "bytes/span", "encode Mspans/s (range)",
              "decode Mspans/s (range)");
  auto row = [&](const std::string& name, const EvaluationRecord& record, const RunRecord& run) {
    const Trace& t = run.trace;
    const double m = static_cast<double>(t.spans.size()) / 1e6;
    std::vector<double> enc_x, dec_x, enc_p, dec_p;
    std::size_t bytes_x = 0, bytes_p = 0;
    for (int i = 0; i < repeats; ++i) {
      auto t0 = Clock::now();
      const std::vector<std::uint8_t> blob = encode_trace(t);
      enc_x.push_back(m / since(t0));
      bytes_x = blob.size();
      t0 = Clock::now();
      const Trace back = decode_trace(blob);
      dec_x.push_back(m / since(t0));
      if (back.spans.size() != t.spans.size()) std::exit(1);

      t0 = Clock::now();
      std::ostringstream pf;
      write_perfetto_trace(pf, t, trace_resource(record, run));
      const std::string bytes = pf.str();
      std::vector<char> z(ZSTD_compressBound(bytes.size()));
      const std::size_t zn = ZSTD_compress(z.data(), z.size(), bytes.data(), bytes.size(), 3);
      enc_p.push_back(m / since(t0));
      bytes_p = zn;
      t0 = Clock::now();
      std::vector<char> back_p(bytes.size());
      ZSTD_decompress(back_p.data(), back_p.size(), z.data(), zn);
      dec_p.push_back(m / since(t0));
    }
    const double n = static_cast<double>(t.spans.size());
    for (int f = 0; f < 2; ++f) {
      const Stats e = stats(f == 0 ? enc_x : enc_p), d = stats(f == 0 ? dec_x : dec_p);
      std::printf("%-30s %10zu %-10s %12.1f %8.2f (%6.2f..%-6.2f) %8.2f (%6.2f..%-6.2f)\n", name.c_str(),
                  t.spans.size(), f == 0 ? "xspt-v3" : "pftrace", (f == 0 ? bytes_x : bytes_p) / n, e.median, e.low,
                  e.high, d.median, d.low, d.high);
    }
  };
  {
    RunRecord run;
    const EvaluationRecord r = fixture_record("resnet18_bs1_kernel_h200.db", dir, run);
    row("resnet18_bs1_kernel_h200.db", r, run);
  }
  {
    EvaluationRecord r;
    r.model_name = "synthetic";
    RunRecord run;
    run.trace = synthetic_trace(1'000'000);
    row("synthetic", r, run);
  }
  fs::remove_all(dir);
  return 0;
}

// ---- streaming export -------------------------------------------------------------------------------------------

// Child: exports run 1 of the store `db` in `format` to `out`; prints "SPANS SECONDS PEAK_RSS_BYTES FILE_BYTES
// START_PEAK_RSS_BYTES" (the last: VmHWM once the store is open and the record loaded, before the export).
int export_child(const fs::path& db, TraceFormat format, const fs::path& out) {
  auto store = Store::open(db, StoreAccess::kRead);
  const EvaluationRecord record = *store->load_without_traces(1);
  const std::int64_t before = status_bytes("VmHWM");
  const auto t0 = Clock::now();
  const TraceExportResult r = export_stored_trace(*store, record, record.runs.front(), format, out);
  const double seconds = since(t0);
  std::uintmax_t bytes = 0;
  for (const fs::path& f : r.files) bytes += fs::file_size(f);
  std::printf("%llu %.6f %lld %ju %lld\n", static_cast<unsigned long long>(r.spans), seconds,
              static_cast<long long>(status_bytes("VmHWM")), bytes, static_cast<long long>(before));
  return 0;
}

int stream(int repeats, const std::vector<TraceFormat>& formats, const std::vector<double>& millions,
           const char* self) {
  const fs::path dir = make_temp_dir();
  std::printf(
      "streaming export of a stored SQLite trace, %d repeats, one child process per export; peak RSS = the "
      "child's VmHWM (whole process)\n",
      repeats);
  std::printf("%-9s %-9s %12s %10s %26s %24s %8s %10s\n", "spans", "format", "blob_bytes", "seconds",
              "Mspans/s (range)", "peak_RSS_MB (range)", "start_MB", "out_B/span");
  for (const double mil : millions) {
    const auto n = static_cast<std::uint64_t>(mil * 1e6);
    const fs::path blob = dir / "trace.xspt", db = dir / "s.db";
    fs::remove(db);
    const auto t0 = Clock::now();
    write_synthetic_blob(n, blob);
    make_store(db, blob);
    std::fprintf(stderr, "store of %llu spans built in %.1f s\n", static_cast<unsigned long long>(n), since(t0));
    const std::uintmax_t blob_bytes = fs::file_size(blob);
    if (n <= 1'000'000) {  // the generator writes what encode_trace would
      std::ifstream in(blob, std::ios::binary);
      const Trace t = decode_trace({std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()});
      if (t.spans.size() != n || encode_trace(t).size() == 0) return 1;
    }
    fs::remove(blob);
    for (const TraceFormat f : formats) {
      std::vector<double> secs, rate, peak, base;
      double out_bytes = 0;
      for (int i = 0; i < repeats; ++i) {
        const fs::path out = dir / "out";
        const std::string cmd = std::string("'") + self + "' --export-child '" + db.string() + "' " +
                                std::string(to_string(f)) + " '" + out.string() + "'";
        FILE* p = popen(cmd.c_str(), "r");
        double spans = 0, s = 0, hwm = 0, fb = 0, start = 0;
        const int got = p ? std::fscanf(p, "%lf %lf %lf %lf %lf", &spans, &s, &hwm, &fb, &start) : 0;
        const int status = p ? pclose(p) : -1;
        fs::remove(out);
        if (got != 5 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          std::fprintf(stderr, "bench_trace_size: the %s export child failed\n", std::string(to_string(f)).c_str());
          return 1;
        }
        secs.push_back(s);
        rate.push_back(spans / s / 1e6);
        peak.push_back(hwm / 1024 / 1024);
        base.push_back(start / 1024 / 1024);
        out_bytes = fb / spans;
      }
      const Stats s = stats(secs), r = stats(rate), pk = stats(peak), b = stats(base);
      std::printf("%-9llu %-9s %12ju %10.2f %8.2f (%6.2f..%-6.2f) %8.0f (%5.0f..%-5.0f) %8.0f %10.1f\n",
                  static_cast<unsigned long long>(n), std::string(to_string(f)).c_str(), blob_bytes, s.median, r.median,
                  r.low, r.high, pk.median, pk.low, pk.high, b.median, out_bytes);
      std::fflush(stdout);
    }
  }
  fs::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 4 && args[0] == "--export-child") {
    const auto f = parse_trace_format(args[2]);
    if (!f) return 2;
    return export_child(args[1], *f, args[3]);
  }
  if (!args.empty() && args[0] == "sizes") return sizes(args.size() > 1 ? std::stoull(args[1]) : 1'000'000);
  if (!args.empty() && args[0] == "stored") return stored(args.size() > 1 ? std::stoi(args[1]) : 3);
  if (args.size() >= 3 && args[0] == "stream") {
    const int repeats = std::stoi(args[1]);
    std::vector<TraceFormat> formats;
    std::size_t i = 2;
    if (args[2].find_first_not_of("0123456789.") != std::string::npos) {
      std::stringstream list(args[2]);
      std::string name;
      while (std::getline(list, name, ',')) {
        const auto f = parse_trace_format(name);
        if (!f) {
          std::fprintf(stderr, "bench_trace_size: unknown format '%s'\n", name.c_str());
          return 2;
        }
        formats.push_back(*f);
      }
      i = 3;
    } else {
      formats = {TraceFormat::kPerfetto};
    }
    std::vector<double> millions;
    for (; i < args.size(); ++i) millions.push_back(std::stod(args[i]));
    if (repeats < 1 || millions.empty()) return 2;
    return stream(repeats, formats, millions, argv[0]);
  }
  std::fprintf(
      stderr,
      "usage: bench_trace_size sizes [SYNTH_SPANS] | stored [REPEATS] | stream REPEATS [FORMATS] MILLIONS...\n");
  return 2;
}
