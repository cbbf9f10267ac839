#pragma once
/// @file pg_history.hpp
/// The PostgreSQL history sink: one row per acquisition in `<table_prefix>history`. Internal to
/// leader::postgres; users open it with leader::open_history(uri).

#include <memory>

#include "leader/history.hpp"
#include "postgres_store.hpp"

namespace leader::postgres {

/// The history sink writing to the database `config` names (`<table_prefix>history`).
std::shared_ptr<HistorySink> make_history_sink(Config config, const HistoryOptions& options);

}  // namespace leader::postgres
