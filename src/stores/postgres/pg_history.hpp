#pragma once
/// @file pg_history.hpp
/// The PostgreSQL history sink: one row per acquisition in `<table_prefix>history`. Internal to
/// leader::postgres; users open it with leader::open_history(uri).

namespace leader::detail::pg {

/// Registers the postgresql:// and postgres:// history sinks (called from register.cpp).
void register_history_sinks();

}  // namespace leader::detail::pg
