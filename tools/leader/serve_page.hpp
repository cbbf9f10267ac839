#pragma once
/// @file serve_page.hpp
/// The status page of `leader serve` (GET /): one self-contained HTML document (inline CSS and
/// JavaScript, no external assets) that polls /v1/locks and /v1/history every 2 seconds.

namespace leader::cli {

/// The page's HTML.
const char* status_page_html();

}  // namespace leader::cli
