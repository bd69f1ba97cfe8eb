package entityapi

import (
	"net/http"
	"net/url"

	"github.com/entityd/entityd/entity"
)

// NextPageHeader carries the cursor of the entity list's next page: the URL of the
// page's last entity, to pass back as ?after=. It is set only when the page is full
// (there may be more); a client that pages stops when it is absent.
const NextPageHeader = "Entityd-Next-After"

// setNextPage tells a client of a full page where the next one starts, as a header and
// as a Link (rel="next") with the request's filters kept. The cursor is taken before
// rows the caller may not read are filtered out, so a page can hold fewer visible
// entities than the limit and still have a next one.
func setNextPage(w http.ResponseWriter, r *http.Request, page []*entity.Entity, limit int) {
	if limit <= 0 || limit > entity.MaxListLimit {
		limit = entity.MaxListLimit
	}
	if len(page) < limit {
		return
	}
	last := page[len(page)-1].URL
	q := r.URL.Query()
	q.Set("after", last)
	next := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	w.Header().Set(NextPageHeader, last)
	w.Header().Set("Link", "<"+next.String()+`>; rel="next"`)
}
