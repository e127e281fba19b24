import { Injectable } from '@nestjs/common';
import { MAX_ANSWER_RETENTION_MS } from '../answer-store/answer-store.port';
import type { OperationFeature } from './operation-feature';

/** The operations this service can run, each with the feature that registered it. */
@Injectable()
export class FeatureRegistry {
  private readonly features = new Map<string, OperationFeature>();

  register(feature: OperationFeature): void {
    const retention = feature.answerRetentionMs;
    if (retention !== undefined && !(Number.isSafeInteger(retention) && retention > 0 && retention <= MAX_ANSWER_RETENTION_MS)) {
      throw new Error(
        `Operation "${feature.operationId}": answerRetentionMs must be an integer from 1 to ${MAX_ANSWER_RETENTION_MS} ms, got ${String(retention)}`,
      );
    }
    const existing = this.features.get(feature.operationId);
    if (existing !== undefined && existing !== feature) {
      throw new Error(`Operation "${feature.operationId}" is already registered by another feature`);
    }
    this.features.set(feature.operationId, feature);
  }

  get(operationId: string): OperationFeature | undefined {
    return this.features.get(operationId);
  }

  operationIds(): string[] {
    return [...this.features.keys()];
  }
}
