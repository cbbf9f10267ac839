// Replays files through a harness without libFuzzer, so that the seed corpus and every input
// that once crashed run in the ordinary test suite (any compiler, ctest label "unit"):
//   fuzz_replay_<harness> DIR_OR_FILE...

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg))
        if (entry.is_regular_file()) files += replay(entry.path());
    } else if (std::filesystem::exists(arg)) {
      files += replay(arg);
    }
  }
  std::printf("replayed %d inputs without a finding\n", files);
  return files > 0 ? 0 : 1;
}
