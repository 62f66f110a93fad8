#include "xsp/pipeline/tokenizer.h"

#include <algorithm>
#include <stdexcept>
#include <system_error>

#ifdef XSP_WITH_SENTENCEPIECE
#include <dlfcn.h>

#include <cstdlib>
#endif

#include "xsp/manifest/files.h"

namespace xsp {

namespace {

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

// Byte offset of the first invalid UTF-8 sequence, or npos.
std::size_t invalid_utf8_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

}  // namespace

#ifdef XSP_WITH_SENTENCEPIECE

bool have_tokenizer() { return true; }

namespace {

// SentencePiece lives in libxsp_sentencepiece.so (src/pipeline/sentencepiece/shim.cc says why), loaded once, locally
// and deep-bound, on the first Tokenizer::load().
struct Shim {
  void* (*load)(const std::string*, std::string*) = nullptr;
  void (*free)(void*) = nullptr;
  bool (*encode)(const void*, const char*, std::size_t, std::vector<int>*, std::string*) = nullptr;
  bool (*decode)(const void*, const std::vector<int>*, std::string*, std::string*) = nullptr;
  int (*id)(const void*, int) = nullptr;
};

Shim open_shim() {
  // XSP_SENTENCEPIECE_SHIM (environment) overrides the path the build wrote it to; then the loader's search path.
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("XSP_SENTENCEPIECE_SHIM"); env && *env) candidates.emplace_back(env);
  candidates.emplace_back(XSP_SENTENCEPIECE_SHIM);
  candidates.emplace_back("libxsp_sentencepiece.so");
  int flags = RTLD_NOW | RTLD_LOCAL;
#if !defined(__SANITIZE_ADDRESS__)
  flags |= RTLD_DEEPBIND;  // AddressSanitizer refuses RTLD_DEEPBIND
#endif
  std::string errors;
  for (const auto& path : candidates) {
    void* lib = dlopen(path.c_str(), flags);
    if (!lib) {
      const char* e = dlerror();
      errors += "\n  " + path + ": " + (e ? e : "unknown error");
      continue;
    }
    Shim s;
    s.load = reinterpret_cast<decltype(s.load)>(dlsym(lib, "xsp_spm_load"));
    s.free = reinterpret_cast<decltype(s.free)>(dlsym(lib, "xsp_spm_free"));
    s.encode = reinterpret_cast<decltype(s.encode)>(dlsym(lib, "xsp_spm_encode"));
    s.decode = reinterpret_cast<decltype(s.decode)>(dlsym(lib, "xsp_spm_decode"));
    s.id = reinterpret_cast<decltype(s.id)>(dlsym(lib, "xsp_spm_id"));
    if (s.load && s.free && s.encode && s.decode && s.id) return s;
    errors += "\n  " + path + ": not XSP's SentencePiece shim (entry points missing)";
  }
  throw std::runtime_error(
      "cannot load XSP's SentencePiece library (libxsp_sentencepiece.so, built with XSP; set "
      "XSP_SENTENCEPIECE_SHIM to its path):" +
      errors);
}

const Shim& shim() {
  static const Shim s = open_shim();  // a throw leaves it unset: the next call tries again
  return s;
}

}  // namespace

struct Tokenizer::Impl {
  std::filesystem::path path;
  void* handle = nullptr;
  int pieces = 0, bos = -1, eos = -1, pad = -1, unk = 0;
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (handle) shim().free(handle);
  }
};

Tokenizer Tokenizer::load(const std::filesystem::path& model_file) {
  // Read the bytes ourselves: SentencePiece's own file error does not say which file, and it would read /dev/zero
  // or a FIFO named by a manifest for ever (RegularFile refuses them before reading).
  const std::string bytes = read_regular_file(model_file, "tokenizer " + quoted(model_file), kMaxTokenizerModelBytes);
  if (bytes.empty())
    throw std::runtime_error("tokenizer " + quoted(model_file) + ": empty file, not a SentencePiece model");
  const Shim& sp = shim();
  auto impl = std::make_unique<Impl>();
  impl->path = model_file;
  std::string error;
  impl->handle = sp.load(&bytes, &error);
  if (!impl->handle)
    throw std::runtime_error("tokenizer " + quoted(model_file) + ": not a SentencePiece model (" + error + ")");
  impl->pieces = sp.id(impl->handle, 0);
  impl->bos = sp.id(impl->handle, 1);
  impl->eos = sp.id(impl->handle, 2);
  impl->pad = sp.id(impl->handle, 3);
  impl->unk = sp.id(impl->handle, 4);
  if (impl->pieces < 1)
    throw std::runtime_error("tokenizer " + quoted(model_file) + ": the SentencePiece model has no pieces");
  return Tokenizer(std::move(impl));
}

std::vector<std::int64_t> Tokenizer::encode(std::string_view text, bool add_bos, bool add_eos) const {
  std::vector<int> ids;
  std::string error;
  if (!shim().encode(impl_->handle, text.data(), text.size(), &ids, &error))
    throw std::runtime_error("tokenizer " + quoted(impl_->path) + ": cannot encode: " + error);
  std::vector<std::int64_t> out;
  out.reserve(ids.size() + 2);
  if (add_bos && bos_id() >= 0) out.push_back(bos_id());
  out.insert(out.end(), ids.begin(), ids.end());
  if (add_eos && eos_id() >= 0) out.push_back(eos_id());
  return out;
}

std::string Tokenizer::decode(const std::vector<std::int64_t>& ids) const {
  const int n = vocab_size();
  std::vector<int> in;
  in.reserve(ids.size());
  for (const std::int64_t id : ids) in.push_back(id >= 0 && id < n ? static_cast<int>(id) : unk_id());
  std::string text, error;
  if (!shim().decode(impl_->handle, &in, &text, &error))
    throw std::runtime_error("tokenizer " + quoted(impl_->path) + ": cannot decode: " + error);
  return text;
}

int Tokenizer::vocab_size() const { return impl_->pieces; }
int Tokenizer::bos_id() const { return impl_->bos; }
int Tokenizer::eos_id() const { return impl_->eos; }
int Tokenizer::pad_id() const { return impl_->pad; }
int Tokenizer::unk_id() const { return impl_->unk; }

#else  // without SentencePiece: the class exists, load() says why it cannot.

bool have_tokenizer() { return false; }

struct Tokenizer::Impl {
  std::filesystem::path path;
};

Tokenizer Tokenizer::load(const std::filesystem::path&) {
  throw std::runtime_error(
      "XSP was built without SentencePiece (Debian: libsentencepiece-dev); text inputs cannot be tokenized");
}

// Unreachable: no Tokenizer can be made without load().
std::vector<std::int64_t> Tokenizer::encode(std::string_view, bool, bool) const { return {}; }
std::string Tokenizer::decode(const std::vector<std::int64_t>&) const { return {}; }
int Tokenizer::vocab_size() const { return 0; }
int Tokenizer::bos_id() const { return -1; }
int Tokenizer::eos_id() const { return -1; }
int Tokenizer::pad_id() const { return -1; }
int Tokenizer::unk_id() const { return -1; }

#endif

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;
const std::filesystem::path& Tokenizer::path() const { return impl_->path; }

std::vector<std::string> load_prompts(const std::filesystem::path& file) {
  const std::string name = "prompt file " + quoted(file);
  const std::string bytes = read_regular_file(file, name, kMaxPromptFileBytes);

  std::vector<std::string> prompts;
  std::size_t line_no = 0;
  for (std::size_t start = 0; start < bytes.size();) {
    std::size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    ++line_no;
    std::string_view line(bytes.data() + start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = name + " line " + std::to_string(line_no);
    if (line.size() > kMaxPromptLineBytes)
      throw std::runtime_error(where + ": " + std::to_string(line.size()) + " bytes, more than the limit of " +
                               std::to_string(kMaxPromptLineBytes) + " for one prompt");
    if (const auto at = invalid_utf8_at(line); at != std::string_view::npos)
      throw std::runtime_error(where + ": not valid UTF-8 (byte " + std::to_string(at + 1) + " of the line)");
    if (line.find_first_not_of(" \t\r\f\v") == std::string_view::npos) continue;  // blank
    prompts.emplace_back(line);
  }
  if (prompts.empty()) throw std::runtime_error(name + ": no prompt (every line is blank)");
  return prompts;
}

std::vector<PromptTokens> tokenize_prompts(const Tokenizer& tokenizer, const std::vector<std::string>& prompts,
                                           int prompt_tokens, bool add_bos, std::size_t* too_short) {
  if (prompt_tokens < 1)
    throw std::invalid_argument("prompt_tokens must be >= 1, not " + std::to_string(prompt_tokens));
  std::vector<PromptTokens> out;
  std::size_t short_count = 0, longest = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    auto ids = tokenizer.encode(prompts[i], add_bos, false);
    longest = std::max(longest, ids.size());
    if (ids.size() < static_cast<std::size_t>(prompt_tokens)) {
      ++short_count;
      continue;
    }
    ids.resize(static_cast<std::size_t>(prompt_tokens));
    out.push_back({std::move(ids), i});
  }
  if (too_short) *too_short = short_count;
  if (out.empty())
    throw std::invalid_argument("no prompt has " + std::to_string(prompt_tokens) + " tokens: all " +
                                std::to_string(prompts.size()) + " prompt(s) are shorter (the longest has " +
                                std::to_string(longest) + ")");
  return out;
}

}  // namespace xsp
