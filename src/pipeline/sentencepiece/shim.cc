// libxsp_sentencepiece.so: SentencePiece behind a few C entry points, loaded by src/pipeline/tokenizer.cc with
// dlopen(RTLD_LOCAL | RTLD_DEEPBIND). Why not link libsentencepiece directly: Debian's libsentencepiece0 (0.1.97)
// carries its own protobuf-lite and exports those google::protobuf symbols, which then interpose on
// libprotobuf.so.32 (pulled in by LibTorch, OpenCV DNN and libonnx): the xsp binary crashed in libprotobuf's static
// initialization before main(). Loaded locally and deep-bound, SentencePiece uses its own protobuf and the rest of
// the process never sees it. C++ types cross the boundary (same compiler and libstdc++); protobuf types do not.
#include <sentencepiece_processor.h>

#include <string>
#include <vector>

#define XSP_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

XSP_SHIM_EXPORT void* xsp_spm_load(const std::string* bytes, std::string* error) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  const auto status = sp->LoadFromSerializedProto(*bytes);
  if (!status.ok()) {
    *error = status.ToString();
    delete sp;
    return nullptr;
  }
  return sp;
}

XSP_SHIM_EXPORT void xsp_spm_free(void* handle) { delete static_cast<sentencepiece::SentencePieceProcessor*>(handle); }

XSP_SHIM_EXPORT bool xsp_spm_encode(const void* handle, const char* text, std::size_t size, std::vector<int>* ids,
                                    std::string* error) {
  const auto status =
      static_cast<const sentencepiece::SentencePieceProcessor*>(handle)->Encode(std::string_view(text, size), ids);
  if (!status.ok()) *error = status.ToString();
  return status.ok();
}

XSP_SHIM_EXPORT bool xsp_spm_decode(const void* handle, const std::vector<int>* ids, std::string* text,
                                    std::string* error) {
  const auto status = static_cast<const sentencepiece::SentencePieceProcessor*>(handle)->Decode(*ids, text);
  if (!status.ok()) *error = status.ToString();
  return status.ok();
}

// 0: number of pieces, 1: bos id, 2: eos id, 3: pad id, 4: unk id.
XSP_SHIM_EXPORT int xsp_spm_id(const void* handle, int what) {
  const auto* sp = static_cast<const sentencepiece::SentencePieceProcessor*>(handle);
  switch (what) {
    case 0:
      return sp->GetPieceSize();
    case 1:
      return sp->bos_id();
    case 2:
      return sp->eos_id();
    case 3:
      return sp->pad_id();
    default:
      return sp->unk_id();
  }
}
