package leader.sidecar;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads the flat fields of the sidecar's JSON replies (no external jar: the replies are flat). */
final class Json {
  private Json() {}

  /** The string value of {@code field}, or null. */
  static String string(String json, String field) {
    Matcher m = Pattern.compile("\"" + Pattern.quote(field) + "\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"")
        .matcher(json);
    return m.find() ? m.group(1).replace("\\\"", "\"").replace("\\\\", "\\") : null;
  }

  /** The integer value of {@code field}, or {@code fallback}. */
  static long number(String json, String field, long fallback) {
    Matcher m = Pattern.compile("\"" + Pattern.quote(field) + "\"\\s*:\\s*(-?\\d+)").matcher(json);
    return m.find() ? Long.parseLong(m.group(1)) : fallback;
  }

  /** {@code s} as a JSON string literal. */
  static String quote(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') out.append('\\').append(c);
      else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
      else out.append(c);
    }
    return out.append('"').toString();
  }
}
