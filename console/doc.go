// Package console serves the web console: the bundle that web/ builds with esbuild into
// dist/, embedded in the binary so that serving it needs no Node and no files on disk.
//
// Every path under Prefix that is not a file of the bundle answers index.html, so the
// console's deep links (/_electric/console/entities/<type>/<id>) load the app, which
// routes on the client. The bundle reads and writes only through the public API with
// the tab's credentials: serving it needs no permission.
package console
