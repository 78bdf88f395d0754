package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// dist is the front end as `make ui` builds it (web/dist: index.html and
// its bundle). The build output is not in the repository, so a binary
// built without npm carries only web/dist/.gitkeep and serves
// placeholderPage instead.
//
//go:embed all:web/dist
var dist embed.FS

// placeholderPage is served at /ui/ by a binary built without the front end.
const placeholderPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Giraffe console</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 2em auto; padding: 0 1em">
<h1>Giraffe console</h1>
<p>This binary was built without the console's front end. Run <code>make ui</code>
(it needs Node.js and npm) and rebuild with <code>make build</code>.</p>
<p>The console's JSON is served all the same: <a href="api/ensemble">api/ensemble</a>,
<a href="api/self">api/self</a>, <a href="api/series">api/series</a>.</p>
</body></html>
`

// Built reports whether the binary carries the front end.
func Built() bool {
	_, err := fs.Stat(dist, "web/dist/index.html")
	return err == nil
}

// Assets serves the front end's files under Prefix (GET and HEAD only),
// or the placeholder page when the binary carries none.
func Assets() http.Handler {
	sub, _ := fs.Sub(dist, "web/dist")
	files := http.StripPrefix(strings.TrimSuffix(Prefix, "/"), http.FileServerFS(sub))
	built := Built()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		// The files change with the binary only; the page polls the API.
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !built {
			if r.URL.Path != Prefix {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(placeholderPage))
			return
		}
		files.ServeHTTP(w, r)
	})
}
