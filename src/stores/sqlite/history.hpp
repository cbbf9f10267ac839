#pragma once
/// @file history.hpp
/// The SQLite history sink: one row per acquisition in `<table_prefix>history` of the store's
/// database file. Internal to leader::sqlite; users open it with leader::open_history(uri).

#include <memory>

#include "leader/history.hpp"
#include "sqlite_store.hpp"

namespace leader::sqlite {

/// The history sink writing to the database `config` names (`<table_prefix>history`).
std::shared_ptr<HistorySink> make_history_sink(Config config, const HistoryOptions& options);

}  // namespace leader::sqlite
