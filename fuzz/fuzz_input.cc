#include "fuzz/fuzz_input.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace hb::fuzz {
namespace {

[[noreturn]] void Die(const char* what) {
  std::perror(what);
  std::abort();
}

constexpr const char* kDatasetLines[] = {
    R"({"prompt_id":"p1","prompt":[{"role":"user","content":"I have a headache."}],)"
    R"("rubrics":[{"criterion":"Asks about duration.","points":5,"tags":["axis:completeness"]},)"
    R"({"criterion":"Advises rest.","points":3,"tags":[]},)"
    R"({"criterion":"Prescribes antibiotics.","points":-8,"tags":["axis:accuracy"]}],)"
    R"("example_tags":["theme:synthetic"]})",
    R"({"prompt_id":"p2","prompt":[{"role":"user","content":"Is water wet?"}],)"
    R"("rubrics":[{"criterion":"Answers.","points":1,"tags":[]}],"example_tags":[]})",
};

}  // namespace

const std::string& WriteInputFile(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("hb_fuzz_input", 0);
  static const std::string path = absl::StrCat("/proc/self/fd/", fd);
  if (fd < 0) Die("memfd_create");
  if (ftruncate(fd, 0) != 0) Die("ftruncate");
  size_t written = 0;
  while (written < size) {
    ssize_t n = pwrite(fd, data + written, size - written, static_cast<off_t>(written));
    if (n <= 0) Die("pwrite");
    written += static_cast<size_t>(n);
  }
  return path;
}

const Dataset& SyntheticDataset() {
  static const Dataset* dataset = [] {
    auto* d = new Dataset();
    int line = 0;
    for (const char* json : kDatasetLines) {
      absl::StatusOr<Example> example = ParseExample(json, "synthetic.jsonl", ++line);
      if (!example.ok()) {
        std::fprintf(stderr, "%s\n", example.status().ToString().c_str());
        std::abort();
      }
      d->index[example->prompt_id] = d->examples.size();
      d->examples.push_back(*std::move(example));
    }
    return d;
  }();
  return *dataset;
}

}  // namespace hb::fuzz
