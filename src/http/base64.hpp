#pragma once
// Standard base64 (RFC 4648 section 4, with padding) for the HTTP stores' JSON bodies: etcd's
// gateway bytes fields, Consul's KV values, kubeconfig's -data fields. Over OpenSSL's
// EVP_EncodeBlock / EVP_DecodeBlock (libcurl's TLS library, already linked by every HTTP store).

#include <optional>
#include <string>
#include <string_view>

namespace leader::http {

/// `bytes` in standard base64 with '=' padding.
[[nodiscard]] std::string base64_encode(std::string_view bytes);
/// The bytes of standard padded base64 `text`; nullopt when it is not (a length that is not a
/// multiple of 4, a character outside the alphabet, '=' anywhere but the last two places).
/// No whitespace is accepted: callers that allow line breaks remove them first.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

}  // namespace leader::http
