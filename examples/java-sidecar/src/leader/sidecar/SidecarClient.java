package leader.sidecar;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

/**
 * The HTTP API of {@code leader serve} (docs/serve.md) with java.net.http: acquire, renew and
 * release one lease. Thread-safe.
 */
public final class SidecarClient {
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private final URI base;
  private final String token; // the bearer token of a sidecar started with --token-file, or null

  public SidecarClient(String baseUrl, String token) {
    this.base = URI.create(baseUrl.endsWith("/") ? baseUrl : baseUrl + "/");
    this.token = token;
  }

  public SidecarClient(String baseUrl) { this(baseUrl, null); }

  /** The lease, or empty when another owner holds the lock after {@code wait}. */
  public Optional<Lease> acquire(String lock, Duration ttl, Duration wait, String nodeId) {
    String body = "{\"ttl\":\"" + ttl.toMillis() + "ms\",\"wait\":\"" + wait.toMillis() + "ms\""
        + (nodeId == null ? "" : ",\"node_id\":" + Json.quote(nodeId)) + "}";
    HttpResponse<String> r = post(lock, "acquire", body, wait.plusSeconds(5));
    if (r.statusCode() == 409) return Optional.empty();
    String json = check(r);
    return Optional.of(new Lease(lock, Json.string(json, "lease_id"),
        Json.number(json, "fencing_token", 0), (int) Json.number(json, "slot", 0),
        Json.number(json, "expires_in_ms", 0)));
  }

  /**
   * Renews for {@code ttl}, waiting at most {@code timeout}: the new expires_in_ms (the sidecar's
   * local deadline, counted from when this request was sent), or empty when the lease was lost
   * (409 lease_lost, 404).
   */
  public Optional<Long> renew(Lease lease, Duration ttl, Duration timeout) {
    HttpResponse<String> r = post(lease.lock(), "renew", "{\"lease_id\":" + Json.quote(lease.leaseId())
        + ",\"ttl\":\"" + ttl.toMillis() + "ms\"}", timeout);
    if (r.statusCode() == 409 || r.statusCode() == 404) return Optional.empty();
    return Optional.of(Json.number(check(r), "expires_in_ms", 0));
  }

  /** Releases the lease; false when it was no longer held. */
  public boolean release(Lease lease) {
    HttpResponse<String> r = post(lease.lock(), "release",
        "{\"lease_id\":" + Json.quote(lease.leaseId()) + "}", Duration.ofSeconds(10));
    if (r.statusCode() == 404) return false;
    check(r);
    return true;
  }

  private HttpResponse<String> post(String lock, String op, String body, Duration timeout) {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve("v1/locks/"
            + URLEncoder.encode(lock, StandardCharsets.UTF_8) + "/" + op))
        .timeout(timeout).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (token != null) b.header("Authorization", "Bearer " + token);
    try {
      return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new SidecarException(0, "unreachable", e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SidecarException(0, "interrupted", "interrupted while calling the sidecar");
    }
  }

  private static String check(HttpResponse<String> r) {
    if (r.statusCode() / 100 == 2) return r.body();
    throw new SidecarException(r.statusCode(), Json.string(r.body(), "error"), Json.string(r.body(), "reason"));
  }
}
