// A minimal OpenTelemetry Collector for the e2e suites that send OTLP
// (tests/e2e/otelcol_lib.sh builds it): the OTLP receiver (HTTP and gRPC)
// and the debug exporter, whose detailed log the suites read back.
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func factories() (otelcol.Factories, error) {
	otlp := otlpreceiver.NewFactory()
	debug := debugexporter.NewFactory()
	return otelcol.Factories{
		Receivers: map[component.Type]receiver.Factory{otlp.Type(): otlp},
		Exporters: map[component.Type]exporter.Factory{debug.Type(): debug},
		Telemetry: otelconftelemetry.NewFactory(),
	}, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol-e2e", Description: "goheap2pprof e2e", Version: "e2e"},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
