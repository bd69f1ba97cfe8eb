package outbound

import "testing"

func TestCheckURL(t *testing.T) {
	ok := []string{
		"https://example.com/hook", "https://93.184.216.34/x", "http://localhost:8080/hook",
		"http://127.0.0.1/hook", "http://127.9.9.9:1/x", "http://[::1]:9/x",
	}
	for _, u := range ok {
		if why := CheckURL(u, "webhook.url", false); why != "" {
			t.Errorf("%s rejected: %s", u, why)
		}
	}
	rejected := []string{
		"http://10.0.0.1/hook", "http://example.com/hook", "https://localhost/hook", "https://10.1.2.3/x",
		"https://192.168.0.1/x", "https://172.16.0.1/x", "https://169.254.169.254/latest", "https://[::1]/x",
		"https://[fd00::1]/x", "https://100.64.0.1/x", "https://0.0.0.0/x", "ftp://example.com/x", "/relative",
		"https://user:secret@example.com/x", "http:///nohost", "not a url", "https://[::ffff:10.0.0.1]/x",
	}
	for _, u := range rejected {
		if why := CheckURL(u, "webhook.url", false); why == "" {
			t.Errorf("%s accepted", u)
		}
	}
	if why := CheckURL("http://10.0.0.1/hook", "webhook.url", true); why != "" {
		t.Errorf("allowPrivate still rejects: %s", why)
	}
}
