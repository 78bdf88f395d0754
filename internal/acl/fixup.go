package acl

import "github.com/giraffe-coord/giraffe/zkproto"

// dedupLinearMax is the list length up to which duplicates are removed by
// pairwise comparison; longer lists (which only a hostile client sends, up to
// the packet limit) use a map so that validation stays linear.
const dedupLinearMax = 16

// Fixup validates the ACL list of a create or setACL request and expands it
// for a caller holding authIDs, as PrepRequestProcessor.fixupACL does:
//
//   - exact duplicate entries are dropped, keeping the first (ZOOKEEPER-1877);
//   - an empty or nil list is invalid;
//   - world:anyone is kept; any other world id is invalid;
//   - an "auth" entry (its id is ignored) is replaced by one entry with the
//     same perms per authenticated id of the caller, in the caller's order;
//     only digest and x509 ids count (ip ids are not authenticated, super
//     has no provider), and a caller with none makes the list invalid;
//   - any other entry must name a registered scheme (digest, ip, x509) with
//     an id that scheme accepts, and is kept unchanged.
//
// Perms are not validated: ZooKeeper 3.9 stores whatever bits the client
// sends. Duplicates produced by the expansion are kept, as in ZooKeeper. The
// error is always zkproto.ErrInvalidACL. The result never aliases list.
func Fixup(list []zkproto.ACL, authIDs []zkproto.Id) ([]zkproto.ACL, error) {
	uniq := dedup(list)
	if len(uniq) == 0 {
		return nil, zkproto.ErrInvalidACL
	}
	out := make([]zkproto.ACL, 0, len(uniq))
	for _, a := range uniq {
		switch {
		case a.ID.Scheme == schemeWorld && a.ID.ID == idAnyone:
			out = append(out, a)
		case a.ID.Scheme == schemeAuth:
			expanded := false
			for _, id := range authIDs {
				if providerAuthenticated(id.Scheme) {
					out = append(out, zkproto.ACL{Perms: a.Perms, ID: id})
					expanded = true
				}
			}
			if !expanded {
				return nil, zkproto.ErrInvalidACL
			}
		case providerValid(a.ID.Scheme, a.ID.ID):
			out = append(out, a)
		default:
			return nil, zkproto.ErrInvalidACL
		}
	}
	return out, nil
}

// ValidID reports whether id may appear in an ACL given to create or setACL:
// world:anyone, any auth id, a digest id of the form "user:hash", an ip id
// "address" or "address/bits" (IPv4 or IPv6, bits within the address length),
// or an x509 id that reads as a distinguished name.
// Every other scheme, including super, is invalid. An "auth" id that is valid
// here can still make Fixup fail when the caller has no authenticated id.
func ValidID(id zkproto.Id) bool {
	switch id.Scheme {
	case schemeWorld:
		return id.ID == idAnyone
	case schemeAuth:
		return true
	}
	return providerValid(id.Scheme, id.ID)
}

// dedup returns list without exact duplicates, first occurrence kept, in a
// new slice.
func dedup(list []zkproto.ACL) []zkproto.ACL {
	out := make([]zkproto.ACL, 0, len(list))
	if len(list) <= dedupLinearMax {
	outer:
		for _, a := range list {
			for _, b := range out {
				if a == b {
					continue outer
				}
			}
			out = append(out, a)
		}
		return out
	}
	seen := make(map[zkproto.ACL]struct{}, len(list))
	for _, a := range list {
		if _, dup := seen[a]; dup {
			continue
		}
		seen[a] = struct{}{}
		out = append(out, a)
	}
	return out
}
