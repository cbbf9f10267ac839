# Sourced by the test-server scripts: data directories on tmpfs for servers that cannot be told
# to skip fsync. etcd 3.4 (Debian 12) fsyncs its WAL and its bbolt file on every write and has
# no switch to stop it (--unsafe-no-fsync came with 3.5): under CI's compile load one
# fdatasync of the 3-member test cluster took 4.7 s (its log's "slow fdatasync"), and lease
# grants failed at their 333 ms call timeout. The data is throwaway, as PostgreSQL's (fsync=off)
# and ZooKeeper's (forceSync=no) already are; so such a directory is a symlink to a directory
# under /dev/shm when the machine has one (the path the server is given stays under /tmp).
# A crash or SIGKILL of the server keeps the data (only a reboot would lose it).

# ram_dir PATH: makes PATH (absent) a symlink to a fresh directory on /dev/shm; keeps an existing
# PATH as it is (a restarted member reuses its data); a plain directory without /dev/shm.
ram_dir() {
  local path=$1
  [ -e "$path" ] && return 0
  mkdir -p "$(dirname "$path")"
  if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "${LE_DATA_ON_DISK:-0}" != 1 ]; then
    ln -s "$(mktemp -d /dev/shm/le-data.XXXXXX)" "$path"
  else
    mkdir -p "$path"
  fi
}

# rm_data PATH...: removes each PATH and the tmpfs directories its symlinks point to.
rm_data() {
  local p l
  for p in "$@"; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    while IFS= read -r l; do
      case $(readlink "$l") in /dev/shm/le-data.*) rm -rf "$(readlink "$l")" ;; esac
    done < <(find "$p" -type l 2> /dev/null)
    rm -rf "$p"
  done
}
