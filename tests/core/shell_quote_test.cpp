// shell_quote: the paths in the commands the program suggests come back from a shell as they were.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/shell_quote.h"

namespace {

// What `sh -c 'printf %s WORD'` prints for the quoted word: the word the shell read.
std::string as_the_shell_reads(const std::string& word) {
  const std::string inner = "printf %s " + hg::shell_quote(word);
  FILE* p = popen(("sh -c " + hg::shell_quote(inner)).c_str(), "r");
  if (!p) return "(popen failed)";
  std::string out;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}

}  // namespace

TEST(ShellQuote, PlainPathsStayAsTheyAre) {
  for (const std::string p :
       {"output/train/e/last.safetensors", "/tmp/run-1/args.yaml", "a_b+c=d:e,f@g%h", "../x.yaml"})
    EXPECT_EQ(hg::shell_quote(p), p);
}

TEST(ShellQuote, OtherPathsAreSingleQuoted) {
  EXPECT_EQ(hg::shell_quote("my runs/last.safetensors"), "'my runs/last.safetensors'");
  EXPECT_EQ(hg::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(hg::shell_quote(""), "''");
  EXPECT_EQ(hg::shell_quote("~/x"), "'~/x'");  // not the home folder: the path as printed
  EXPECT_EQ(hg::shell_quote("caf\xc3\xa9"), "'caf\xc3\xa9'");  // non-ASCII: quoted, to be safe
}

TEST(ShellQuote, TheShellReadsBackTheSameWord) {
  const std::vector<std::string> words = {"plain/path.yaml",
                                          "my runs/last.safetensors",
                                          "it's",
                                          "''",
                                          "a\"b",
                                          "$HOME",
                                          "`id`",
                                          "$(id)",
                                          "*.yaml",
                                          "a;b&c|d",
                                          "x\ny",
                                          "back\\slash",
                                          "!1",
                                          "#x",
                                          "~/x",
                                          "a b  c",
                                          "tab\there",
                                          "(x)",
                                          "{a,b}",
                                          "[ab]",
                                          "<in",
                                          ">out",
                                          "caf\xc3\xa9"};
  for (const std::string& p : words) {
    SCOPED_TRACE(p);
    EXPECT_EQ(as_the_shell_reads(p), p);
  }
}

// A path starting with '-' came back as it was (shlex.quote leaves it so): the command the program
// suggested, e.g. `haargrad train -runs/e/args.yaml --resume ...` after a run with `--output
// -runs`, read it as an option. A relative path starting with '-' gets "./": the same file, and
// no command reads it as an option.
TEST(ShellQuote, APathStartingWithADashIsNoOption) {
  EXPECT_EQ(hg::shell_quote("-weird.yaml"), "./-weird.yaml");
  EXPECT_EQ(hg::shell_quote("-runs/e/last.safetensors"), "./-runs/e/last.safetensors");
  EXPECT_EQ(hg::shell_quote("--resume"), "./--resume");
  EXPECT_EQ(hg::shell_quote("-my runs/it's"), "'./-my runs/it'\\''s'");
  EXPECT_EQ(hg::shell_quote("runs/-e/x.yaml"), "runs/-e/x.yaml");  // a '-' further on is no option
  for (const std::string p : {"-weird.yaml", "-", "--", "-my runs/it's", "-$x"}) {
    SCOPED_TRACE(p);
    EXPECT_EQ(as_the_shell_reads(p), "./" + p);
  }
}
