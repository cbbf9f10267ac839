#pragma once
// Internal: one object per thread reused by the engine's calls (ElectionCore::acquire's request,
// ElectionCore::finish's lease).

namespace leader::detail {

// One object per thread reused by the calls that run on it (the acquire's request, the
// release's lease: their strings keep their buffers, so neither allocates), `busy` while a call
// uses it: a call nested on the same thread (from a listener or a store) builds its own.
template <class T>
struct Scratch {
  T value;
  bool busy = false;
};

// Marks `scratch` busy for as long as it lives; a no-op for null (the call built its own).
template <class T>
class ScratchUse {
 public:
  explicit ScratchUse(Scratch<T>* scratch) : scratch_(scratch) {
    if (scratch_ != nullptr) scratch_->busy = true;
  }
  ScratchUse(const ScratchUse&) = delete;
  ScratchUse& operator=(const ScratchUse&) = delete;
  ~ScratchUse() {
    if (scratch_ != nullptr) scratch_->busy = false;
  }

 private:
  Scratch<T>* scratch_;
};

}  // namespace leader::detail
