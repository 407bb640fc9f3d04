import { loadTelemetryConfig } from './telemetry-config';

describe('loadTelemetryConfig', () => {
  it('is off without an OTLP endpoint', () => {
    expect(loadTelemetryConfig({})).toEqual({ tracesUrl: undefined, serviceName: undefined, exportDelayMs: 5_000 });
  });

  it('sends traces to <endpoint>/v1/traces, or to the traces endpoint when given', () => {
    expect(loadTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracesUrl).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(
      loadTelemetryConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp',
      }).tracesUrl,
    ).toBe('https://traces.example/otlp');
  });

  it('OTEL_SDK_DISABLED=true turns it off even with an endpoint', () => {
    expect(
      loadTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })
        .tracesUrl,
    ).toBeUndefined();
    expect(
      loadTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'TRUE' })
        .tracesUrl,
    ).toBeUndefined();
  });

  it('takes the service name and the export delay', () => {
    expect(loadTelemetryConfig({ OTEL_SERVICE_NAME: 'api-eu-1', OTEL_BSP_SCHEDULE_DELAY: '250' })).toMatchObject({
      serviceName: 'api-eu-1',
      exportDelayMs: 250,
    });
  });

  it('refuses what it cannot use, naming the variable', () => {
    expect(() => loadTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
    expect(() => loadTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
    expect(() => loadTelemetryConfig({ OTEL_BSP_SCHEDULE_DELAY: 'soon' })).toThrow(/OTEL_BSP_SCHEDULE_DELAY/);
  });
});
