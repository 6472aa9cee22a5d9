// Fuzz harness of the configuration (core/base/fuzz_check.h): any text given
// as a config file is refused with an error that says something, or gives
// Options whose effective configuration (Options::ToString, what the status
// page shows an admin) loads again to the same Options. Bad input must never crash the
// target at start or be read as something else than it says.
//
// Input: the file's text. Seeds: the example configuration of the docs and
// lines that use every kind of value (sizes, durations, volumes, policies).
#include <string>
#include <vector>

#include "core/base/config.h"
#include "core/base/fuzz_check.h"
#include "core/engine/options.h"

namespace dedupv1 {
namespace {

void CheckConfigText(const std::string& text) {
  Config config;
  Status s = Config::Parse(text, "fuzz.conf", &config);
  if (!s.ok()) {
    FUZZ_CHECK(!s.message().empty(), "a refusal without a message");
    return;
  }
  Options options;
  s = Options::FromConfig(config, &options);
  if (!s.ok()) {
    FUZZ_CHECK(s.IsInvalidArgument() || s.IsNotSupported(), "FromConfig: " + s.ToString());
    return;
  }
  // Also for a relative data-dir (text parsed here keeps it relative):
  // the module paths under it are printed relative to it.
  const std::string effective = options.ToString();
  Config again;
  Status s2 = Config::Parse(effective, "effective.conf", &again);
  FUZZ_CHECK(s2.ok(), "the effective configuration does not parse: " + s2.ToString());
  Options reloaded;
  s2 = Options::FromConfig(again, &reloaded);
  FUZZ_CHECK(s2.ok(), "the effective configuration is refused: " + s2.ToString() + "\n" + effective);
  FUZZ_CHECK(reloaded.ToString() == effective, "the effective configuration reads back as another:\n" + effective +
                                                    "\n---\n" + reloaded.ToString());
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  seeds->push_back(
      "# a store\n"
      "data-dir = /var/lib/dedupv1\n"
      "volume = backup 1T\n"
      "volume = vm1 64G policy=selective\n"
      "volume = vm2 10G policy=out-of-band\n");
  seeds->push_back(
      "chunking = fastcdc\n"
      "chunking.min-size = 4K\n"
      "chunking.avg-size = 8K\n"
      "chunking.max-size = 32K\n"
      "container.compression = zlib\n"
      "write-buffer.size = 128M\n"
      "dedup.threads = 4\n"
      "dedup.selective.threshold = 3\n"
      "dedup.background.period = 5m\n"
      "volume = a 1G policy=off\n");
  seeds->push_back("volume = x 4096\nvolume = y 1M policy=inline\n   # comment\n\n");
  seeds->push_back("data-dir = store/dd/\nlog.path = logs/ops\nchunk-index.path = /ssd/ci\nvolume = r 1G\n");
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dedupv1::CheckConfigText(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
