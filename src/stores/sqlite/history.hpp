#pragma once
/// @file history.hpp
/// The SQLite history sink: one row per acquisition in `<table_prefix>history` of the store's
/// database file. Internal to leader::sqlite; users open it with leader::open_history(uri).

namespace leader::sqlite {

/// Registers the sqlite: history sink (called from register.cpp).
void register_history_sinks();

}  // namespace leader::sqlite
