// Semantic versions and constraints (include/xsp/manifest/semver.h).
#include "xsp/manifest/semver.h"

#include <gtest/gtest.h>

using xsp::satisfies;

TEST(SemVer, ParsesLeniently) {
  auto v = xsp::parse_semver("1.13.0a0");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 1);
  EXPECT_EQ(v->minor, 13);
  EXPECT_EQ(v->patch, 0);
  EXPECT_EQ(v->prerelease, "a0");
  v = xsp::parse_semver("2.11.0+cu130");
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (xsp::SemVer{2, 11, 0, ""}));
  EXPECT_EQ(*xsp::parse_semver("v1.13.1"), (xsp::SemVer{1, 13, 1, ""}));
  EXPECT_EQ(*xsp::parse_semver("1"), (xsp::SemVer{1, 0, 0, ""}));
  EXPECT_EQ(*xsp::parse_semver("1.13"), (xsp::SemVer{1, 13, 0, ""}));
  EXPECT_EQ(xsp::parse_semver("1.0.0-rc.1")->prerelease, "rc.1");
  EXPECT_FALSE(xsp::parse_semver("abc"));
  EXPECT_FALSE(xsp::parse_semver(""));
}

TEST(SemVer, SatisfiesTruthTable) {
  struct Row {
    const char* version;
    const char* constraint;
    bool expected;
  };
  const Row rows[] = {
      {"1.13.0a0", ">=1.13", true},  // Debian's torch: prerelease tags compare by numbers
      {"1.12.9", ">=1.13", false},     {"2.11.0+cu130", ">=1.13", true},  // build metadata ignored
      {"1.13.0", ">1.13", false},      {"1.13.1", ">1.13", true},
      {"1.13.0", "<=1.13", true},      {"1.2.0", "^1.2", true},
      {"1.9.3", "^1.2", true},         {"1.1.9", "^1.2", false},
      {"2.0.0", "^1.2", false},        {"1.2.0", "~1.2", true},
      {"1.2.9", "~1.2", true},         {"1.3.0", "~1.2", false},
      {"1.1.0", "~1.2", false},        {"2.11.0+cu130", ">=1.13, <3", true},
      {"3.0.0", ">=1.13, <3", false},  {"1.12.0", ">=1.13, <3", false},
      {"1.13.0a0", ">=1.13 <3", true},  // blank-separated clauses
      {"1.13.0", ">= 1.13", true},      // operator apart from its version
      {"1.13.1", "1.13.1", true},      {"1.13.2", "1.13.1", false},
      {"1.13.2", "=1.13", true},  // missing components are wildcards for exact matches
      {"1.14.0", "==1.13", false},     {"0.1.0", "*", true},
  };
  for (const auto& r : rows)
    EXPECT_EQ(satisfies(r.version, r.constraint), r.expected) << r.version << " vs " << r.constraint;
}

TEST(SemVer, BadConstraints) {
  for (const char* bad : {"", ">=one", "=>1.13", ">>1", "1.x", "latest", ">=1.13,, <"}) {
    EXPECT_THROW(xsp::check_constraint(bad), std::invalid_argument) << "'" << bad << "'";
  }
  try {
    xsp::check_constraint(">=1.13, <abc");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'<abc'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(xsp::check_constraint(">=1.13, <3"));
  EXPECT_THROW(satisfies("not-a-version", ">=1"), std::invalid_argument);
}
