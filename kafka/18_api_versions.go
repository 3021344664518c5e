package kafka

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions: v0-4
//
// Behavior:
// * Lists every key of the API table (apis.go) with its advertised
//   range, sorted by key.
// * A version above 4 is answered in v0 format with UNSUPPORTED_VERSION
//   and a single entry, ApiVersions' own range, as Kafka does since 2.4
//   (KIP-511): the client retries at our highest version. The dispatcher
//   builds that answer (apiVersionsTooNew), since the body of an unknown
//   version cannot be parsed. franz-go opens with v5 and takes this path.
// * The response header is never flexible, even for v3+.
// * v3+: ClientSoftwareName and ClientSoftwareVersion must match
//   [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, else INVALID_REQUEST with
//   no keys (Kafka's ApiVersionsRequest.isValid). Valid ones are kept on
//   the Session for logs.
// * Allowed before authentication.
// * Authorization: none.
//
// Not implemented:
// * SupportedFeatures and FinalizedFeatures (KIP-584) are empty and
//   FinalizedFeaturesEpoch is -1: no feature levels (transaction.version,
//   metadata.version) are advertised yet.
// * ThrottleMillis is always 0: no quotas.

var clientSoftwarePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (s *Server) handleApiVersions(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.ApiVersionsRequest)
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	if r.Version >= 3 {
		if !clientSoftwarePattern.MatchString(r.ClientSoftwareName) ||
			!clientSoftwarePattern.MatchString(r.ClientSoftwareVersion) {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return Respond(resp), nil
		}
		req.Session.ClientSoftwareName = r.ClientSoftwareName
		req.Session.ClientSoftwareVersion = r.ClientSoftwareVersion
	}
	resp.ApiKeys = s.apis.versions
	return Respond(resp), nil
}

// apiVersionsTooNew is the answer to an ApiVersions version above ours.
func (s *Server) apiVersionsTooNew() *kmsg.ApiVersionsResponse {
	e := s.apis.lookup(int16(kmsg.ApiVersions))
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{
		ApiKey: int16(kmsg.ApiVersions), MinVersion: e.Min, MaxVersion: e.Max,
	}}
	return resp
}
