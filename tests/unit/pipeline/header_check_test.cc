// Issue 31, finding 8: an image's size is read from its header and checked against kMaxImagePixels before anything
// decodes it. A PNG of a few dozen bytes whose IHDR says 32000x32000 used to cost 3 GB in cv::imdecode before the
// decoded size was refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "xsp/pipeline/pipeline.h"

using namespace xsp;

namespace {

using Bytes = std::vector<std::uint8_t>;

void put_be32(Bytes& b, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<std::uint8_t>(v >> shift));
}
void put_le32(Bytes& b, std::uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) b.push_back(static_cast<std::uint8_t>(v >> shift));
}
void put_le16(Bytes& b, std::uint16_t v) {
  b.push_back(static_cast<std::uint8_t>(v));
  b.push_back(static_cast<std::uint8_t>(v >> 8));
}

// CRC-32 of PNG chunks (ISO 3309, polynomial 0xEDB88320; PNG spec §5.5), over the chunk type and data.
std::uint32_t crc32(const Bytes& bytes, std::size_t from) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = from; i < bytes.size(); ++i) {
    c ^= bytes[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

void chunk(Bytes& png, const char* type, const Bytes& data) {
  put_be32(png, static_cast<std::uint32_t>(data.size()));
  const std::size_t start = png.size();
  png.insert(png.end(), type, type + 4);
  png.insert(png.end(), data.begin(), data.end());
  put_be32(png, crc32(png, start));
}

// A whole PNG (signature, IHDR with a correct CRC, a tiny IDAT holding a valid zlib stream, IEND) whose header says
// width x height; color_type 0 is 8-bit grey, 2 is 8-bit RGB.
Bytes png_claiming(std::uint32_t width, std::uint32_t height, std::uint8_t color_type) {
  Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes ihdr;
  put_be32(ihdr, width);
  put_be32(ihdr, height);
  ihdr.insert(ihdr.end(), {8, color_type, 0, 0, 0});  // bit depth, color type, compression, filter, interlace
  chunk(png, "IHDR", ihdr);
  // zlib: header 78 01, one final stored block of 1 byte (00), Adler-32 of that byte.
  chunk(png, "IDAT", {0x78, 0x01, 0x01, 0x01, 0x00, 0xFE, 0xFF, 0x00, 0x00, 0x01, 0x00, 0x01});
  chunk(png, "IEND", {});
  return png;
}

// A baseline JPEG's start: SOI, a frame header (SOF0) of width x height with 3 components, then EOI (so that the
// truncation check passes; the header is all that may be read).
Bytes jpeg_claiming(std::uint16_t width, std::uint16_t height) {
  Bytes j = {0xFF, 0xD8, 0xFF, 0xC0, 0x00, 17, 8};
  j.push_back(static_cast<std::uint8_t>(height >> 8));
  j.push_back(static_cast<std::uint8_t>(height));
  j.push_back(static_cast<std::uint8_t>(width >> 8));
  j.push_back(static_cast<std::uint8_t>(width));
  j.insert(j.end(), {3, 1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1, 0xFF, 0xD9});
  return j;
}

// A 24-bit BMP's headers (BITMAPFILEHEADER + BITMAPINFOHEADER) of width x height, and a few bytes of pixels.
Bytes bmp_claiming(std::uint32_t width, std::uint32_t height) {
  Bytes b = {'B', 'M'};
  put_le32(b, 54 + 16);
  put_le32(b, 0);
  put_le32(b, 54);
  put_le32(b, 40);
  put_le32(b, width);
  put_le32(b, height);
  put_le16(b, 1);
  put_le16(b, 24);
  for (std::uint32_t v : {0u, 16u, 2835u, 2835u, 0u, 0u}) put_le32(b, v);
  b.resize(b.size() + 16, 0x7F);
  return b;
}

InputSpec rgb_224() {
  InputSpec spec;
  spec.type = "image";
  spec.element_type = "float32";
  spec.color_mode = "RGB";
  spec.dimensions = {3, 224, 224};
  ProcessingStep decode;
  decode.op = "decode";
  ProcessingStep resize;
  resize.op = "resize";
  resize.params = {{"shorter_side", "256"}, {"method", "bilinear"}};
  ProcessingStep crop;
  crop.op = "center_crop";
  crop.params = {{"size", "224"}};
  spec.steps = {decode, resize, crop};
  return spec;
}

std::string message_of(const std::string& id, const Bytes& bytes) {
  try {
    Preprocessor(rgb_224()).run({EncodedInput{id, bytes}});
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

#define REQUIRE_HEADER_CHECK()                                                   \
  if (!have_image_header_check())                                                \
  GTEST_SKIP() << "built without OpenCV or without stb_image (libstb-dev): the " \
                  "size is only checked after decoding"

const std::string kRefused = "; refused from the header, before decoding";

}  // namespace

TEST(ImageHeaderCheck, APngWhoseHeaderSays32000x32000IsRefusedBeforeDecoding) {
  REQUIRE_HEADER_CHECK();
  const Bytes png = png_claiming(32000, 32000, 0);
  ASSERT_LT(png.size(), 100u);
  EXPECT_EQ(truncation_problem(png), "");  // a whole PNG: refused for its size, not as cut
  const std::string m = message_of("huge.png", png);
  EXPECT_NE(m.find("input huge.png: its image header gives 32000x32000 pixels, more than the 67108864 an input image "
                   "may have" +
                   kRefused),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("cannot decode"), std::string::npos) << m;
}

// stb_image itself refuses an RGB PNG this large from its header ("too large": more than 2^30 bytes decoded); the
// message still names the size and the limit.
TEST(ImageHeaderCheck, AnRgbPngTooLargeForStbImageIsRefusedNamingItsSize) {
  REQUIRE_HEADER_CHECK();
  const std::string m = message_of("huge_rgb.png", png_claiming(32000, 32000, 2));
  EXPECT_NE(m.find("input huge_rgb.png: its image header gives 32000x32000 pixels, more than the 67108864"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(kRefused), std::string::npos) << m;
}

TEST(ImageHeaderCheck, JpegAndBmpHeadersAreCheckedToo) {
  REQUIRE_HEADER_CHECK();
  const std::string j = message_of("huge.jpg", jpeg_claiming(32000, 32000));
  EXPECT_NE(j.find("input huge.jpg: its image header gives 32000x32000 pixels, more than the 67108864"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find(kRefused), std::string::npos) << j;
  const std::string b = message_of("huge.bmp", bmp_claiming(32000, 32000));
  EXPECT_NE(b.find("input huge.bmp: its image header gives 32000x32000 pixels, more than the 67108864"),
            std::string::npos)
      << b;
  EXPECT_NE(b.find(kRefused), std::string::npos) << b;
}

// Just below the limit the header check lets the image through: 8192x8192 = 67108864 pixels is the limit itself, so
// the header is fine and the (absent) pixel data makes it a decode failure, as before.
TEST(ImageHeaderCheck, AHeaderAtTheLimitGoesOnToTheDecoder) {
  REQUIRE_HEADER_CHECK();
  const std::string m = message_of("limit.png", png_claiming(8192, 8192, 0));
  EXPECT_EQ(m.find("image header gives"), std::string::npos) << m;
  const std::string over = message_of("over.png", png_claiming(8193, 8192, 0));
  EXPECT_NE(over.find("8193x8192 pixels, more than the 67108864"), std::string::npos) << over;
}

TEST(ImageHeaderCheck, AnUnreadableHeaderIsADecodeFailureNamingTheInput) {
  REQUIRE_HEADER_CHECK();
  const std::string text = "notes, not an image";
  const std::string m = message_of("notes.jpg", Bytes(text.begin(), text.end()));
  EXPECT_NE(m.find("cannot decode input notes.jpg as an image: its header cannot be read"), std::string::npos) << m;
}
