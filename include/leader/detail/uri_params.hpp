#pragma once
/// @file uri_params.hpp
/// The URI parameter naming scheme shared by every store (docs/uri-parameters.md) and the old
/// spellings still accepted. Uri::param(key) takes the canonical name and also finds an old
/// spelling of it for the URI's scheme (a deprecation notice goes to stderr once per spelling and
/// process); an old spelling and its canonical name with different values throw InvalidArgument
/// naming both. Uri::expect_params accepts the old spellings of the names it is given.

#include <span>
#include <string_view>

namespace leader {

/// An old spelling of a URI parameter, still accepted by the stores of `schemes`.
struct UriParamAlias {
  std::string_view schemes;    ///< space-separated schemes, e.g. "etcd etcds"
  std::string_view alias;      ///< the old spelling, e.g. "cacert"
  std::string_view canonical;  ///< the name to use instead, e.g. "tls_ca"
};

/// Every accepted old spelling: the one table (src/core/config/uri_params.cpp).
[[nodiscard]] std::span<const UriParamAlias> uri_param_aliases();

}  // namespace leader
