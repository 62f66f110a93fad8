// The plain-LibTorch reference for AOTInductor packages (issue 26, BENCHMARKS.md "AOTInductor packages"): what XSP's
// aotinductor predictor and generator measure, done by a bare loop over torch::inductor::AOTIModelPackageLoader with
// no XSP code in it, and PyTorch's own profiler (Kineto, the engine of torch.profiler) counting the device
// activities of one step. It exists because PyTorch's Python loader (torch._inductor.package.load_package) crashed on
// every package on the lent H200 (torch 2.11), so the Python references could not be used.
//
//   aoti_reference generate PACKAGE.pt2 --batch B --prompt-tokens P --output-tokens N [--requests R] [--warmup W]
//   aoti_reference classify PACKAGE.pt2 --batch B --shape 3,224,224 [--iterations I] [--warmup W]
//   ... --kineto    (instead of timing: device activities per step under Kineto)
//
// generate: a Hugging Face static-cache export (scripts/export_hf.py; model "b<B>", forward(input_ids [B, T] int64,
// cache_position [T] int64) -> logits [B, T, vocab]). Each request: t0; prompt ids copied host->device; prefill;
// argmax on the device; the tokens copied to the host (the first token is out); N-1 decode steps, each position filled
// on the device, argmax, copy to the host. TTFT = first token on the host - t0; TPOT = (last - first) / (N - 1)
// (docs/generation.md). Prints the JSON of scripts/generate_reference.py (ttft_ns and tpot_ns summaries and the
// per-request lists), so bench/generation_check.py compare pairs it with XSP's runs.
// classify: the predict step of XSP's aotinductor predictor: a float input [B, shape...] copied host->device, run,
// first output copied device->host. Prints the median and quartiles of I steps in ns.
// --kineto: Kineto (CPU + CUDA activities) around W steps after warm-up; prints device kernels, memcpys and memsets
// per step (generate: per prefill and per decode step).
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Linear interpolation between closest ranks (NumPy's default), q in [0, 100]; as generate_reference.py.
double percentile(std::vector<double> xs, double q) {
  std::sort(xs.begin(), xs.end());
  if (xs.size() == 1) return xs[0];
  const double pos = (static_cast<double>(xs.size()) - 1) * q / 100.0;
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, xs.size() - 1);
  return xs[lo] + (xs[hi] - xs[lo]) * (pos - static_cast<double>(lo));
}

std::string summary_json(const std::vector<double>& xs) {
  if (xs.empty()) return "null";
  double sum = 0;
  for (double x : xs) sum += x;
  std::ostringstream o;
  o << "{\"median\": " << percentile(xs, 50) << ", \"p90\": " << percentile(xs, 90)
    << ", \"p99\": " << percentile(xs, 99) << ", \"q1\": " << percentile(xs, 25) << ", \"q3\": " << percentile(xs, 75)
    << ", \"mean\": " << sum / static_cast<double>(xs.size())
    << ", \"min\": " << *std::min_element(xs.begin(), xs.end())
    << ", \"max\": " << *std::max_element(xs.begin(), xs.end()) << "}";
  return o.str();
}

std::string list_json(const std::vector<double>& xs) {
  std::ostringstream o;
  o << "[";
  for (std::size_t i = 0; i < xs.size(); ++i) o << (i ? ", " : "") << static_cast<std::int64_t>(xs[i]);
  return o.str() + "]";
}

struct DeviceCounts {
  double kernels = 0, memcpys = 0, memsets = 0;
};

/// Runs `step` `steps` times under Kineto (CPU and CUDA activities) and returns the device activities per step.
template <class Step>
DeviceCounts kineto_counts(Step step, int steps) {
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  const std::set<ActivityType> activities{ActivityType::CPU, ActivityType::CUDA};
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  for (int i = 0; i < steps; ++i) step();
  torch::cuda::synchronize();
  const std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
  DeviceCounts c;
  for (const prof::KinetoEvent& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CUDA) continue;
    const std::string name = e.name();
    if (name.rfind("Memcpy", 0) == 0)
      c.memcpys += 1;
    else if (name.rfind("Memset", 0) == 0)
      c.memsets += 1;
    else
      c.kernels += 1;
  }
  c.kernels /= steps;
  c.memcpys /= steps;
  c.memsets /= steps;
  return c;
}

std::string counts_json(const DeviceCounts& c) {
  std::ostringstream o;
  o << "{\"kernels\": " << c.kernels << ", \"memcpys\": " << c.memcpys << ", \"memsets\": " << c.memsets << "}";
  return o.str();
}

struct Args {
  std::string mode, package;
  int batch = 1, prompt_tokens = 128, output_tokens = 128, requests = 10, warmup = 3, iterations = 200;
  std::vector<std::int64_t> shape{3, 224, 224};
  bool kineto = false;
};

int usage(const std::string& why) {
  std::cerr << "aoti_reference: " << why
            << "\nusage: aoti_reference generate|classify PACKAGE.pt2 --batch B [--prompt-tokens P --output-tokens N "
               "--requests R | --shape 3,224,224 --iterations I] [--warmup W] [--kineto]\n";
  return 2;
}

int generate(const Args& a, const torch::Device device) {
  torch::inductor::AOTIModelPackageLoader model(a.package, "b" + std::to_string(a.batch), false, 1, device.index());
  const int P = a.prompt_tokens, N = a.output_tokens, B = a.batch;
  const at::Tensor ids_host = torch::randint(4, 2000, {B, P}, torch::dtype(torch::kLong));
  c10::InferenceMode guard;
  at::Tensor token;
  std::int64_t position = 0;
  auto prefill = [&] {
    const at::Tensor ids = ids_host.to(device);
    const at::Tensor positions = torch::arange(P, torch::dtype(torch::kLong).device(device));
    token = model.run({ids, positions}).at(0).select(1, P - 1).argmax(-1).view({-1, 1});
    position = P;
    return token.to(torch::kCPU);
  };
  auto decode = [&] {
    const at::Tensor pos = torch::full({1}, position, torch::dtype(torch::kLong).device(device));
    token = model.run({token, pos}).at(0).select(1, 0).argmax(-1).view({-1, 1});
    ++position;
    return token.to(torch::kCPU);
  };
  auto request = [&](std::int64_t& t0, std::int64_t& t_first, std::int64_t& t_last) {
    t0 = now_ns();
    prefill();
    t_first = t_last = now_ns();
    for (int s = 1; s < N; ++s) {
      decode();
      t_last = now_ns();
    }
  };
  std::int64_t t0 = 0, t1 = 0, t2 = 0;
  for (int i = 0; i < a.warmup; ++i) request(t0, t1, t2);
  if (a.kineto) {
    const DeviceCounts pre = kineto_counts([&] { prefill(); }, std::max(1, a.requests));
    prefill();
    const int steps = std::min(N - 1, 64);
    const DeviceCounts dec = kineto_counts([&] { decode(); }, std::max(1, steps));
    std::cout << "{\"package\": \"" << a.package << "\", \"batch\": " << B << ", \"prompt_tokens\": " << P
              << ", \"profiler\": \"kineto (LibTorch " TORCH_VERSION ")\", \"prefill\": " << counts_json(pre)
              << ", \"decode\": " << counts_json(dec) << "}\n";
    return 0;
  }
  std::vector<double> ttft, tpot, e2e;
  for (int i = 0; i < a.requests; ++i) {
    request(t0, t1, t2);
    ttft.push_back(static_cast<double>(t1 - t0));
    if (N > 1) tpot.push_back(static_cast<double>(t2 - t1) / (N - 1));
    e2e.push_back(static_cast<double>(t2 - t0));
  }
  double total_s = 0;
  for (double x : e2e) total_s += x / 1e9;
  std::cout << "{\"model\": \"" << a.package << "\", \"device\": \"" << device.str() << "\", \"dtype\": \"fp32\""
            << ", \"batch\": " << B << ", \"prompt_tokens\": " << P << ", \"output_tokens\": " << N
            << ", \"requests\": " << a.requests << ", \"warmup\": " << a.warmup
            << ", \"torch\": \"" TORCH_VERSION "\", \"loop\": \"C++ AOTIModelPackageLoader (bench/aoti_reference.cc)\""
            << ", \"ttft_ns\": " << summary_json(ttft) << ", \"tpot_ns\": " << summary_json(tpot)
            << ", \"output_tokens_per_s\": " << (total_s > 0 ? B * N * a.requests / total_s : 0)
            << ", \"per_request\": {\"ttft_ns\": " << list_json(ttft) << ", \"tpot_ns\": " << list_json(tpot)
            << ", \"e2e_ns\": " << list_json(e2e) << "}}\n";
  return 0;
}

int classify(const Args& a, const torch::Device device) {
  torch::inductor::AOTIModelPackageLoader model(a.package, "model", false, 1, device.index());
  std::vector<std::int64_t> dims{a.batch};
  dims.insert(dims.end(), a.shape.begin(), a.shape.end());
  const at::Tensor host = torch::rand(dims);
  c10::InferenceMode guard;
  auto step = [&] { return model.run({host.to(device)}).at(0).to(torch::kCPU); };
  for (int i = 0; i < a.warmup; ++i) step();
  if (a.kineto) {
    const DeviceCounts c = kineto_counts(step, std::max(1, a.iterations));
    std::cout << "{\"package\": \"" << a.package << "\", \"batch\": " << a.batch
              << ", \"profiler\": \"kineto (LibTorch " TORCH_VERSION ")\", \"step\": " << counts_json(c) << "}\n";
    return 0;
  }
  std::vector<double> ns;
  for (int i = 0; i < a.iterations; ++i) {
    const std::int64_t t0 = now_ns();
    step();
    ns.push_back(static_cast<double>(now_ns() - t0));
  }
  std::cout << "{\"package\": \"" << a.package << "\", \"batch\": " << a.batch << ", \"iterations\": " << a.iterations
            << ", \"latency_ns\": " << summary_json(ns) << "}\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 2) return usage("needs a mode and a package");
  a.mode = args[0];
  a.package = args[1];
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::string& f = args[i];
    if (f == "--kineto") {
      a.kineto = true;
      continue;
    }
    if (i + 1 >= args.size()) return usage("flag " + f + " needs a value");
    const std::string v = args[++i];
    try {
      if (f == "--batch")
        a.batch = std::stoi(v);
      else if (f == "--prompt-tokens")
        a.prompt_tokens = std::stoi(v);
      else if (f == "--output-tokens")
        a.output_tokens = std::stoi(v);
      else if (f == "--requests")
        a.requests = std::stoi(v);
      else if (f == "--warmup")
        a.warmup = std::stoi(v);
      else if (f == "--iterations")
        a.iterations = std::stoi(v);
      else if (f == "--shape") {
        a.shape.clear();
        std::istringstream in(v);
        for (std::string d; std::getline(in, d, ',');) a.shape.push_back(std::stoll(d));
      } else
        return usage("unknown flag " + f);
    } catch (const std::exception&) {
      return usage("flag " + f + " needs an integer, got '" + v + "'");
    }
  }
  if (a.batch < 1 || a.prompt_tokens < 1 || a.output_tokens < 1 || a.requests < 1 || a.iterations < 1 || a.warmup < 0)
    return usage("counts must be >= 1 (warm-up >= 0)");
  const torch::Device device =
      torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  try {
    if (a.mode == "generate") return generate(a, device);
    if (a.mode == "classify") return classify(a, device);
  } catch (const std::exception& e) {
    std::cerr << "aoti_reference: " << e.what() << "\n";
    return 1;
  }
  return usage("mode must be generate or classify, got '" + a.mode + "'");
}
