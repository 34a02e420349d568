package dashboard

import neturl "net/url"

// cloneQuery copies query values, so that building a link does not change the
// request's own.
func cloneQuery(q neturl.Values) neturl.Values {
	out := neturl.Values{}
	for k, vs := range q {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
