package dashboard

import (
	neturl "net/url"
	"strconv"
)

// cloneQuery copies query values, so that building a link does not change the
// request's own.
func cloneQuery(q neturl.Values) neturl.Values {
	out := neturl.Values{}
	for k, vs := range q {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// pageAfter links the page that follows a full one: path with q, its key
// set to the id the next page starts from.
func pageAfter(path string, q neturl.Values, key string, id int64) string {
	nq := cloneQuery(q)
	nq.Set(key, strconv.FormatInt(id, 10))
	return path + "?" + nq.Encode()
}
