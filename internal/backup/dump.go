package backup

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Dump writes every znode of the snapshot file at path to w, one line
// each, parents before children and children by name: the path, its
// stat, its data's length and its ACL, then, with data, a line with the
// data quoted as a Go string. The sessions follow, one line each.
func Dump(path string, w io.Writer, data bool) error {
	tree, st, err := Load(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# snapshot at zxid %s: %d znodes, %d sessions, digest %s\n", st.Zxid, st.Znodes, st.Sessions, st.Digest)
	tree.Walk(func(p string, d []byte, s zkproto.Stat, list []zkproto.ACL) bool {
		fmt.Fprintf(bw, "%s czxid=0x%x mzxid=0x%x pzxid=0x%x ctime=%d mtime=%d version=%d cversion=%d aversion=%d ephemeralOwner=0x%x dataLength=%d numChildren=%d acl=%s\n",
			p, s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime, s.Version, s.Cversion, s.Aversion, s.EphemeralOwner,
			s.DataLength, s.NumChildren, aclText(list))
		if data {
			if d == nil {
				fmt.Fprintln(bw, "  data: null")
			} else {
				fmt.Fprintf(bw, "  data: %q\n", d)
			}
		}
		return true
	})
	for _, si := range tree.Sessions() {
		fmt.Fprintf(bw, "session 0x%x timeout=%d ephemerals=%d\n", si.ID, si.Timeout, len(tree.Ephemerals(si.ID, "/")))
	}
	return bw.Flush()
}

// aclText writes an ACL list as zkCli's getAcl names its entries, joined:
// scheme:id:perms.
func aclText(list []zkproto.ACL) string {
	parts := make([]string, len(list))
	for i, a := range list {
		parts[i] = a.ID.Scheme + ":" + a.ID.ID + ":" + acl.PermString(a.Perms)
	}
	return strings.Join(parts, ",")
}
