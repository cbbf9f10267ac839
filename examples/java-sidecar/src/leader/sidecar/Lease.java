package leader.sidecar;

/** A lease held through the sidecar. The id is the only thing that can renew or release it. */
public record Lease(String lock, String leaseId, long fencingToken, int slot, long expiresInMs) {
  @Override
  public String toString() { // never the id
    return "Lease[lock=" + lock + ", fencingToken=" + fencingToken + ", slot=" + slot + "]";
  }
}
