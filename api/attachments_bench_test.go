package api_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/entityd/entityd/internal/testserver"
)

// BenchmarkAttachment compares an attachment's upload (multipart, into a closed stream,
// with its row and manifest entry) and download (GET …/attachments/:id) with a plain
// binary stream append of the same bytes (POST) and its catch-up read: what the
// attachment's bookkeeping costs over the stream it is stored in. MB/s is of the file.
func BenchmarkAttachment(b *testing.B) {
	srv := testserver.Start(b, testserver.Options{QuietLogs: true})
	call := func(method, path string, body []byte, headers ...string) (int, int) {
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		if body == nil {
			req.Body = http.NoBody
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		n, _ := io.Copy(io.Discard, res.Body)
		return res.StatusCode, int(n)
	}
	if st, _ := call("POST", typesPath, []byte(`{"name":"bench","description":"d"}`), "Content-Type", "application/json"); st != 201 {
		b.Fatalf("register: %d", st)
	}
	if st, _ := call("PUT", entitiesPath+"/bench/b1", []byte(`{}`), "Content-Type", "application/json"); st != 201 {
		b.Fatalf("spawn: %d", st)
	}
	for _, size := range []int{64 << 10, 1 << 20, 8 << 20} {
		data := randomBytes(b, size)
		name := fmt.Sprintf("%dKiB", size>>10)
		seq := 0
		b.Run("upload/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				seq++
				body, ct := multipartBody(b, filePart("f.bin", "application/octet-stream", data),
					field("id", fmt.Sprintf("u%d-%d", size, seq)), field("subject", `{"type":"inbox","key":"m"}`))
				if st, _ := call("POST", entitiesPath+"/bench/b1/attachments", body, "Content-Type", ct); st != 201 {
					b.Fatalf("upload: %d", st)
				}
			}
		})
		b.Run("stream-append/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				seq++
				path := fmt.Sprintf("/plain/s%d-%d", size, seq)
				if st, _ := call("PUT", path, nil, "Content-Type", "application/octet-stream"); st != 201 {
					b.Fatalf("create: %d", st)
				}
				if st, _ := call("POST", path, data, "Content-Type", "application/octet-stream"); st != 204 {
					b.Fatalf("append: %d", st)
				}
			}
		})
		id := fmt.Sprintf("d%d", size)
		body, ct := multipartBody(b, filePart("f.bin", "application/octet-stream", data), field("id", id),
			field("subject", `{"type":"inbox","key":"m"}`))
		if st, _ := call("POST", entitiesPath+"/bench/b1/attachments", body, "Content-Type", ct); st != 201 {
			b.Fatalf("upload: %d", st)
		}
		b.Run("download/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if st, n := call("GET", entitiesPath+"/bench/b1/attachments/"+id, nil); st != 200 || n != size {
					b.Fatalf("download: %d, %d bytes", st, n)
				}
			}
		})
		plain := "/plain/read-" + name
		call("PUT", plain, nil, "Content-Type", "application/octet-stream")
		call("POST", plain, data, "Content-Type", "application/octet-stream")
		b.Run("stream-read/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if n := readBinary(b, srv.URL+plain); n != size {
					b.Fatalf("read %d bytes", n)
				}
			}
		})
	}
}

// readBinary reads a binary stream from its start to its tail, following
// Stream-Next-Offset, and returns how many bytes it had.
func readBinary(b *testing.B, url string) int {
	total, offset := 0, "-1"
	for {
		res, err := http.Get(url + "?offset=" + offset)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("read: %d", res.StatusCode)
		}
		total += int(n)
		if res.Header.Get("Stream-Up-To-Date") == "true" {
			return total
		}
		offset = res.Header.Get("Stream-Next-Offset")
	}
}
