package entityapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/attachment"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
)

// uploadCopies is what an upload holds besides its file while it is stored: one append
// of appendChunks chunks copied by the database driver (4 MiB).
const uploadCopies = 4 * attachment.ChunkBytes

// createAttachment is POST /_electric/entities/:type/:id/attachments: a multipart upload
// (file, subject or subjectType+subjectKey, role, filename, mimeType, meta, id) → 201
// {txid, attachment}. The file is read as it arrives, into a reservation of bytes in
// flight, and refused with 413 at the first byte past the limit (or before a byte is
// read, when Content-Length says so).
func (s *handlers) createAttachment(w http.ResponseWriter, r *http.Request) error {
	if err := refusePrincipalEntity(r, "given attachments"); err != nil {
		return err
	}
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	max := s.cfg.MaxAttachmentBytes
	limit := max + attachment.FormOverhead
	if r.ContentLength > limit {
		return attachmentTooLarge(max)
	}
	p := api.Caller(r)
	// a principal at its quota is refused before its file is read (and again after, with
	// the file's size)
	if err := s.quotas.attachment(r.Context(), p, 0); err != nil {
		return err
	}
	n := limit
	if r.ContentLength >= 0 {
		n = r.ContentLength
	}
	release, err := s.kit.Reserve(r, n+uploadCopies)
	if err != nil {
		return err
	}
	defer release()
	if s.cfg.BodyReadTimeout > 0 {
		// a file takes longer to arrive than a JSON body: the body's timeout plus its
		// length at the slowest rate a response may be written at
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout +
			time.Duration(n/s.cfg.WriteMinRate)*time.Second))
	}
	form, err := attachment.ParseForm(http.MaxBytesReader(w, r.Body, limit), r.Header.Get("Content-Type"), max)
	var bad *attachment.FormError
	switch {
	case errors.Is(err, attachment.ErrTooLarge):
		w.Header().Set("Connection", "close") // the rest of the body is not read
		return attachmentTooLarge(max)
	case errors.Is(err, attachment.ErrTimeout):
		w.Header().Set("Connection", "close")
		return httpx.New(http.StatusRequestTimeout, api.CodeRequestTimeout, "The request body did not arrive in time")
	case errors.As(err, &bad):
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, bad.Msg)
	case err != nil:
		return err
	}
	if err := s.quotas.attachment(r.Context(), p, form.Size); err != nil {
		return err
	}
	txid, entry, err := s.attachments.Create(r.Context(), &attachment.Upload{EntityURL: e.URL, Form: form,
		CreatedBy: p.URL(), Owner: p.String()})
	switch {
	case errors.Is(err, attachment.ErrExists):
		return httpx.New(http.StatusConflict, api.CodeInvalidRequest, fmt.Sprintf("Attachment already exists at id %q", form.ID))
	case errors.Is(err, entity.ErrNotRunning):
		return httpx.New(http.StatusConflict, api.CodeNotRunning, "Entity is not accepting writes")
	case err != nil:
		return err
	}
	var o rawjson.Object
	o.String("txid", txid).Raw("attachment", entry)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, err = w.Write(o.Bytes())
	return err
}

func attachmentTooLarge(max int64) error {
	return httpx.New(http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge,
		fmt.Sprintf("Attachment exceeds maximum size of %d bytes", max))
}

// readAttachment is GET /_electric/entities/:type/:id/attachments/:attId: the bytes, as
// they were uploaded, with their content type. An attachment never changes while it
// exists (the reference's immutable caching: clients make a new id per upload), so the
// response may be cached for good; the ETag is its digest.
func (s *handlers) readAttachment(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	a, err := s.attachments.Get(r.Context(), e.URL, api.Param(r, "attId"))
	if errors.Is(err, attachment.ErrNotFound) {
		return attachmentNotFound()
	}
	if err != nil {
		return err
	}
	m, err := s.attachments.Open(r.Context(), a)
	if errors.Is(err, attachment.ErrNotFound) {
		return attachmentNotFound()
	}
	if err != nil {
		return err
	}
	// what is held while the bytes are written: one message at a time
	release, err := s.kit.Reserve(r, attachment.ChunkBytes)
	if err != nil {
		return err
	}
	defer release()
	h := w.Header()
	etag := `"sha256-` + a.SHA256 + `"`
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	// the bytes are the uploader's: never a page of this origin, whatever their type says
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Content-Disposition", contentDisposition(a.Filename))
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", a.MimeType)
	h.Set("Content-Length", strconv.FormatInt(a.ByteLength, 10))
	w.WriteHeader(http.StatusOK)
	return s.copyAttachment(r.Context(), w, m)
}

// copyAttachment writes the stream's messages (ChunkBytes each) as they are read. Once
// the headers are out an error can only cut the response short, which the client sees
// as a body shorter than its Content-Length.
func (s *handlers) copyAttachment(ctx context.Context, w http.ResponseWriter, m *streamdb.Meta) error {
	from := streamdb.Start
	for from.Seq < m.Tail.Seq {
		msgs, err := s.streams.Read(ctx, m, from, m.Tail)
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			return nil
		}
		for _, msg := range msgs {
			if _, err := w.Write(msg.Data); err != nil {
				return nil // the client went away
			}
		}
		from = msgs[len(msgs)-1].End
	}
	return nil
}

// deleteAttachment is DELETE /_electric/entities/:type/:id/attachments/:attId → {txid}.
func (s *handlers) deleteAttachment(w http.ResponseWriter, r *http.Request) error {
	if err := refusePrincipalEntity(r, "stripped of attachments"); err != nil {
		return err
	}
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	txid, err := s.attachments.Delete(r.Context(), e.URL, api.Param(r, "attId"))
	switch {
	case errors.Is(err, attachment.ErrNotFound):
		return attachmentNotFound()
	case errors.Is(err, entity.ErrNotRunning):
		return httpx.New(http.StatusConflict, api.CodeNotRunning, "Entity is not accepting writes")
	case err != nil:
		return err
	}
	return writeTxid(w, txid)
}

func attachmentNotFound() error {
	return httpx.New(http.StatusNotFound, api.CodeNotFound, "Attachment not found")
}

// attachment is checked before p uploads size bytes: the count and the bytes of what p
// uploaded before.
func (q quotas) attachment(ctx context.Context, p principal.Principal, size int64) error {
	if (q.limits.Attachments <= 0 && q.limits.AttachmentBytes <= 0) || quota.Exempt(p) {
		return nil
	}
	count, bytes, err := q.s.attachments.Usage(ctx, p.String())
	if err != nil {
		return err
	}
	if err := quota.Check(p, int(count), 1, q.limits.Attachments, "attachments", "ENTITYD_QUOTA_ATTACHMENTS"); err != nil {
		return err
	}
	return quota.Check(p, int(bytes), int(size), q.limits.AttachmentBytes, "bytes of attachments", "ENTITYD_QUOTA_ATTACHMENT_BYTES")
}
