// Tests of core/utf8: which bytes are no UTF-8 (RFC 3629), and how a message shows them.
#include <gtest/gtest.h>

#include <string>

#include "core/utf8.h"

namespace {

constexpr size_t kValid = std::string::npos;

TEST(Utf8, ValidTextHasNoInvalidByte) {
  EXPECT_EQ(hg::invalid_utf8_at(""), kValid);
  EXPECT_EQ(hg::invalid_utf8_at("plain/ascii path.png"), kValid);
  EXPECT_EQ(hg::invalid_utf8_at("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x88"), kValid);  // é € 🐈
  EXPECT_EQ(hg::invalid_utf8_at("\xf4\x8f\xbf\xbf"), kValid);                           // U+10FFFF
}

TEST(Utf8, InvalidSequencesAreFoundAtTheirFirstByte) {
  EXPECT_EQ(hg::invalid_utf8_at("caf\xe9"), 3u);           // Latin-1
  EXPECT_EQ(hg::invalid_utf8_at("a\x80"), 1u);             // a lone continuation byte
  EXPECT_EQ(hg::invalid_utf8_at("\xc0\xaf"), 0u);          // overlong '/'
  EXPECT_EQ(hg::invalid_utf8_at("\xe0\x80\xaf"), 0u);      // overlong, 3 bytes
  EXPECT_EQ(hg::invalid_utf8_at("ab\xed\xa0\x80"), 2u);    // a surrogate
  EXPECT_EQ(hg::invalid_utf8_at("\xf4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(hg::invalid_utf8_at("\xe2\x82"), 0u);          // cut short
  EXPECT_EQ(hg::invalid_utf8_at("\xc3\xa9\xff"), 2u);
}

TEST(Utf8, ShownEscapesTheInvalidBytesOnly) {
  EXPECT_EQ(hg::utf8_shown("/data/caf\xe9/x"), "/data/caf\\xe9/x");
  EXPECT_EQ(hg::utf8_shown("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(hg::utf8_shown("\xe2\x82"), "\\xe2\\x82");
}

// A name for a terminal or log line: control characters cannot break the line or reach the
// terminal as commands; letters of any script stay as they are.
TEST(Utf8, PrintableEscapesControlCharacters) {
  EXPECT_EQ(hg::printable("cat/0001.jpg"), "cat/0001.jpg");
  EXPECT_EQ(hg::printable("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(hg::printable("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(hg::printable("\x1b[31mred\x7f"), "\\x1b[31mred\\x7f");
  EXPECT_EQ(hg::printable(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(hg::printable("csi\xc2\x9b"
                          "2J"),
            "csi\\xc2\\x9b"
            "2J");                                           // U+009B, a C1 control
  EXPECT_EQ(hg::printable("nbsp\xc2\xa0"), "nbsp\xc2\xa0");  // U+00A0 is no control
  EXPECT_EQ(hg::printable("caf\xe9"), "caf\\xe9");           // not UTF-8: as utf8_shown
}

// What printable writes reads one way only: a backslash and an n in a name were written as they
// are, the same as a line break's \n (and a name's "\x1b" as an ESC byte's). The bidi controls
// and the other invisible format characters passed unseen: a U+202E in a file name shows the rest
// of the log line reversed ("exe.txt" shown for "txt.exe"), a zero-width space hides in a name.
TEST(Utf8, PrintableTellsABackslashFromAnEscapeAndShowsInvisibleCharacters) {
  EXPECT_EQ(hg::printable("a\\nb"), "a\\\\nb");
  EXPECT_NE(hg::printable("a\\nb"), hg::printable("a\nb"));
  EXPECT_EQ(hg::printable("C:\\x1b"), "C:\\\\x1b");
  EXPECT_EQ(hg::printable("photo\xe2\x80\xaegpj.exe"), "photo\\u{202e}gpj.exe");  // RLO
  EXPECT_EQ(hg::printable("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u{2066}x\\u{2069}");   // LRI, PDI
  EXPECT_EQ(hg::printable("a\xe2\x80\x8b"
                          "b\xef\xbb\xbf"),
            "a\\u{200b}b\\u{feff}");                                 // ZWSP, BOM
  EXPECT_EQ(hg::printable("tag\xf3\xa0\x80\x81"), "tag\\u{e0001}");  // four bytes
  EXPECT_EQ(hg::printable("line\xe2\x80\xa8sep"), "line\\u{2028}sep");
  EXPECT_EQ(hg::printable("\xe2\x80\x94 \xd7\x90"),
            "\xe2\x80\x94 \xd7\x90");  // a dash, Hebrew: kept
  for (const char32_t cp : {U'\u202A', U'\u202B', U'\u202C', U'\u202D', U'\u202E', U'\u2066',
                            U'\u2067', U'\u2068', U'\u2069'})
    EXPECT_TRUE(hg::invisible_format(cp)) << static_cast<unsigned>(cp);
  EXPECT_FALSE(hg::invisible_format(U'a'));
  EXPECT_FALSE(hg::invisible_format(U'\u2014'));
}

}  // namespace
