#pragma once
/// @file my_history.hpp
/// The MariaDB / MySQL history sink: one row per acquisition in `<table_prefix>history`. Internal
/// to leader::mysql; users open it with leader::open_history(uri).

namespace leader::detail::my {

/// Registers the mysql:// and mariadb:// history sinks (called from register.cpp).
void register_history_sinks();

}  // namespace leader::detail::my
