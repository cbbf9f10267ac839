package leader.sidecar;

/** The sidecar refused a request or could not be reached: its HTTP status and error code. */
public class SidecarException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int status;
  private final String code;

  public SidecarException(int status, String code, String reason) {
    super("leader sidecar: " + status + " " + code + (reason == null ? "" : ": " + reason));
    this.status = status;
    this.code = code;
  }

  /** The HTTP status (0 when the sidecar could not be reached). */
  public int status() { return status; }

  /** The sidecar's error code: held_elsewhere, lease_lost, unavailable, ... */
  public String code() { return code; }
}
