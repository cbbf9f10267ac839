#pragma once
/// @file my_history.hpp
/// The MariaDB / MySQL history sink: one row per acquisition in `<table_prefix>history`. Internal
/// to leader::mysql; users open it with leader::open_history(uri).

#include <memory>

#include "leader/history.hpp"
#include "mysql_store.hpp"

namespace leader::mysql {

/// The history sink writing to the database `config` names (`<table_prefix>history`).
std::shared_ptr<HistorySink> make_history_sink(Config config, const HistoryOptions& options);

}  // namespace leader::mysql
