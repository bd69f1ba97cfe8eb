package acp

import (
	"errors"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/require"
)

func TestComposerInput(t *testing.T) {
	known := func(name string) bool { return name == "search" || name == "cmd" }
	link := sdk.ResourceLinkBlock
	for _, tc := range []struct {
		name   string
		blocks []sdk.ContentBlock
		want   string
	}{
		{"plain text has no nodes", []sdk.ContentBlock{sdk.TextBlock("hi there")}, `{"source":"hi there"}`},
		{"text blocks are concatenated", []sdk.ContentBlock{sdk.TextBlock("/search "), sdk.TextBlock("x")},
			`{"source":"/search x","nodes":[{"kind":"slash_command","start":0,"end":7,"raw":"/search","name":"search"}]}`},
		{"a link alone", []sdk.ContentBlock{link("a.go", "file:///src/a.go")},
			`{"source":"@a.go","nodes":[{"kind":"file","start":0,"end":5,"raw":"@a.go","path":"/src/a.go"}]}`},
		{"no space added after whitespace", []sdk.ContentBlock{sdk.TextBlock("see\n"), link("a.go", "file:///src/a.go")},
			`{"source":"see\n@a.go","nodes":[{"kind":"file","start":4,"end":9,"raw":"@a.go","path":"/src/a.go"}]}`},
		{"a link without a name shows its URI", []sdk.ContentBlock{sdk.TextBlock("𝄞"), link("", "https://example.com/x")},
			`{"source":"𝄞 https://example.com/x","nodes":[{"kind":"file","start":3,"end":24,"raw":"https://example.com/x","path":"https://example.com/x"}]}`},
		{"escaped file paths are decoded", []sdk.ContentBlock{link("my file.go", "file:///src/my%20file.go")},
			`{"source":"@my file.go","nodes":[{"kind":"file","start":0,"end":11,"raw":"@my file.go","path":"/src/my file.go"}]}`},
		{"commands inside a link's text are not commands", []sdk.ContentBlock{sdk.TextBlock("/cmd"), link("x /cmd y", "file:///x"), sdk.TextBlock("/search")},
			`{"source":"/cmd @x /cmd y /search","nodes":[{"kind":"slash_command","start":0,"end":4,"raw":"/cmd","name":"cmd"},` +
				`{"kind":"file","start":5,"end":14,"raw":"@x /cmd y","path":"/x"},` +
				`{"kind":"slash_command","start":15,"end":22,"raw":"/search","name":"search"}]}`},
		{"unknown commands are flagged", []sdk.ContentBlock{sdk.TextBlock("/what now")},
			`{"source":"/what now","nodes":[{"kind":"slash_command","start":0,"end":5,"raw":"/what","name":"what","unknown":true}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := composerInput(tc.blocks, known)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
		})
	}
}

func TestComposerInputRefusals(t *testing.T) {
	_, err := composerInput([]sdk.ContentBlock{sdk.AudioBlock("aGk=", "audio/wav")}, nil)
	var pr *promptRefusal
	require.True(t, errors.As(err, &pr))
	require.Equal(t, []Detail{{Path: "/prompt/0", Message: "audio content is not supported; send text and resource links"}}, pr.details)
	for _, empty := range [][]sdk.ContentBlock{nil, {sdk.TextBlock("")}} {
		_, err = composerInput(empty, nil)
		require.True(t, errors.As(err, &pr), "an empty prompt is refused")
		require.Equal(t, []Detail{{Path: "/prompt", Message: "must not be empty"}}, pr.details)
	}

	// The limit counts the link text and the space before it.
	blocks := []sdk.ContentBlock{sdk.TextBlock(repeat("a", maxSourceUnits-6)), sdk.ResourceLinkBlock("a.go", "file:///a.go")}
	_, err = composerInput(blocks, nil)
	require.NoError(t, err)
	blocks[0] = sdk.TextBlock(repeat("a", maxSourceUnits-5))
	_, err = composerInput(blocks, nil)
	require.True(t, errors.As(err, &pr))
	require.Equal(t, "/source", pr.details[0].Path)

	// Nodes: slash commands and links together.
	text := repeat("/a ", maxNodes-1)
	_, err = composerInput([]sdk.ContentBlock{sdk.TextBlock(text), sdk.ResourceLinkBlock("a.go", "file:///a.go")}, nil)
	require.NoError(t, err)
	_, err = composerInput([]sdk.ContentBlock{sdk.TextBlock(text), sdk.ResourceLinkBlock("a.go", "file:///a.go"), sdk.ResourceLinkBlock("b.go", "file:///b.go")}, nil)
	require.True(t, errors.As(err, &pr))
	require.Equal(t, "/nodes", pr.details[0].Path)
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

func TestInputHint(t *testing.T) {
	yes, no := true, false
	require.Equal(t, "", inputHint(nil))
	require.Equal(t, "<number> [include_tests] [x]", inputHint([]argument{{Name: "number", Required: &yes}, {Name: "include_tests"}, {Name: "x", Required: &no}}))
}
