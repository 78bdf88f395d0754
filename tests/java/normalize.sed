# Replace what legitimately differs between servers and runs: times, zxids,
# session ids, the address and the client version line.
s/^(ctime|mtime) = .*/\1 = <time>/
s/^(cZxid|mZxid|pZxid) = 0x[0-9a-f]+/\1 = <zxid>/
s/zxid: -?[0-9]+/zxid: <zxid>/
s/^ephemeralOwner = 0x[0-9a-f]*[1-9a-f][0-9a-f]*$/ephemeralOwner = <session>/
s/^Connecting to .*/Connecting to <server>/
s/^ZooKeeper CLI version: .*/ZooKeeper CLI version: <version>/
/^$/d
